#include "admission/pod_key_limits.hpp"

#include <numeric>
#include <string>

namespace sluice::admission {

void pod_key_row::repair() noexcept { in_use = std::accumulate(held.begin(), held.end(), std::uint64_t{0}); }

void pod_key_row::release_worker(std::size_t w) noexcept {
  in_use -= std::min<std::uint64_t>(in_use, held[w]);
  held[w] = 0;
}

namespace {

// A bucket as `limit` says: kept (its level clamped) when it stays limited, made full when it
// becomes limited, dropped when it no longer is.
void reconfigure(std::optional<token_bucket>& b, std::uint64_t limit, token_bucket::time_point now) {
  if (limit == 0) b.reset();
  else if (b) b->set_limit(limit);
  else b.emplace(limit, now);
}

}  // namespace

pod_key_limits::pod_key_limits(client_keys keys, std::size_t worker, now_fn now)
    : keys_(std::move(keys)),
      worker_(worker),
      now_(now ? std::move(now) : now_fn([] { return client_keys::clock::now(); })),
      rows_(keys_.size(), nullptr) {}

result<pod_key_limits> pod_key_limits::attach(client_keys keys, pod_keys& table, std::size_t worker,
                                              std::uint32_t generation, now_fn now) {
  constexpr std::string_view what = "keys with limits", advice = "use --redis";
  // Checked before any key: a worker row out of range is refused even without keys that need rows.
  if (!runtime::is_pod_worker_row(worker)) return runtime::pod_rows_error(worker, pod_key_rows, what, advice);
  pod_key_limits l(std::move(keys), worker, std::move(now));
  const auto t = l.now_();
  for (std::size_t i = 0; i < l.keys_.size(); ++i) {
    const auto k = l.keys_.at(i);
    if (k.max_streams() == 0 && k.rpm() == 0 && k.tpm() == 0) continue;
    auto set_up = [&](pod_key_row& r) {
      reconfigure(r.requests, k.rpm(), t);
      reconfigure(r.tokens, k.tpm(), t);
    };
    auto row = table.attach_or_error(l.keys_.digest(i), worker, generation, set_up, set_up, what, advice);
    if (!row) return error::make(errc::bad_request, "keys-file: " + row.err().message);
    l.rows_[i] = *row;
  }
  return l;
}

std::size_t pod_key_limits::shared_keys() const noexcept {
  std::size_t n = 0;
  for (auto* r : rows_) n += r != nullptr ? 1 : 0;
  return n;
}

key_decision pod_key_limits::decide(const key_handle& key, std::uint64_t tokens) {
  auto& e = entry_of(key);
  auto* row = rows_[e.index];
  if (row == nullptr) {  // no limit: nothing to count for the pod
    e.in_use.fetch_add(1, std::memory_order_acq_rel);
    return make_permit(e, {}, permit_usage{});
  }
  const auto now = now_();
  pod_keys::guard r(*row);
  if (r->requests) r->requests->refill(now);
  if (r->tokens) r->tokens->refill(now);
  if (auto refused = decide_on(e.max_streams, r->in_use, r->requests, r->tokens, tokens)) return std::move(*refused);
  ++r->held[worker_];
  ++r->in_use;
  e.in_use.fetch_add(1, std::memory_order_acq_rel);  // this process's part, for key_handle::in_use()
  return make_permit(e, bucket_headers(r->requests, r->tokens), permit_usage{0, r->tokens ? tokens : 0, std::nullopt});
}

task<key_decision> pod_key_limits::acquire(const key_handle& key, std::uint64_t tokens) { co_return decide(key, tokens); }

void pod_key_limits::release(detail::key_entry& e, const permit_usage& u) noexcept {
  e.in_use.fetch_sub(1, std::memory_order_acq_rel);
  auto* row = rows_[e.index];
  if (row == nullptr) return;
  const auto now = now_();
  pod_keys::guard r(*row);
  if (r->held[worker_] > 0) {
    --r->held[worker_];
    --r->in_use;
  }
  if (r->tokens) {
    r->tokens->refill(now);
    settle_tokens(*r->tokens, u);
  }
}

}  // namespace sluice::admission
