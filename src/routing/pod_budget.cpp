#include "routing/pod_budget.hpp"

#include <numeric>
#include <string>

namespace sluice::routing {
namespace {

// How long a pick refused for the pod's max-concurrent waits before it asks again.
constexpr auto pod_slot_poll = std::chrono::milliseconds(20);

void reconfigure(std::optional<token_bucket>& b, std::uint64_t& configured, std::uint64_t limit, time_point now) {
  if (configured == limit) return;  // learned limits and levels stay
  configured = limit;
  if (limit == 0) b.reset();
  else b.emplace(limit, now);
}

}  // namespace

runtime::row_identity pod_identity(const upstream_spec& s) { return runtime::identity_of(s.name + '\n' + s.url); }

void pod_budget_row::repair() noexcept { in_flight = std::accumulate(held.begin(), held.end(), std::uint64_t{0}); }

void pod_budget_row::release_worker(std::size_t w) noexcept {
  in_flight -= std::min<std::uint64_t>(in_flight, held[w]);
  held[w] = 0;
}

result<std::unique_ptr<pod_budget>> pod_budget::attach(const upstream_spec& spec, time_point now, pod_budgets& table,
                                                       std::size_t worker, std::uint32_t generation) {
  auto set_up = [&](pod_budget_row& r) {
    reconfigure(r.pace.requests, r.configured_rpm, spec.requests_per_minute, now);
    reconfigure(r.pace.tokens, r.configured_tpm, spec.tokens_per_minute, now);
  };
  auto row = table.attach_or_error(pod_identity(spec), worker, generation, set_up, set_up, "upstreams");
  if (!row) return std::move(row).err();
  return std::unique_ptr<pod_budget>(new pod_budget(**row, worker, spec.max_concurrent));
}

std::optional<duration> pod_budget::try_reserve(std::uint64_t tokens, time_point now) {
  pod_budgets::guard r(*row_);
  return r->pace.try_reserve(tokens, now);
}

void pod_budget::refund(std::uint64_t tokens, time_point now) {
  pod_budgets::guard r(*row_);
  r->pace.refund(tokens, now);
}

void pod_budget::settle(std::uint64_t estimated, std::uint64_t actual, time_point now) {
  pod_budgets::guard r(*row_);
  r->pace.settle(estimated, actual, now);
}

void pod_budget::observe(const ratelimit_headers& h, time_point now) {
  pod_budgets::guard r(*row_);
  r->pace.observe(h, now);
}

void pod_budget::block_until(time_point until) {
  pod_budgets::guard r(*row_);
  r->pace.block_until(until);
}

std::optional<duration> pod_budget::wait_time(std::uint64_t tokens, time_point now) {
  pod_budgets::guard r(*row_);
  return r->pace.wait_time(tokens, now);
}

bool pod_budget::has_token_budget() const {
  pod_budgets::guard r(*row_);
  return r->pace.has_token_budget();
}

pacer_snapshot pod_budget::snapshot(time_point now) {
  pod_budgets::guard r(*row_);
  return r->pace.snapshot(now);
}

task<std::optional<duration>> pod_budget::confirm(std::uint64_t tokens, budget_ticket& t) {
  pod_budgets::guard r(*row_);
  if (r->in_flight >= max_concurrent_) {
    // The pick's reservation goes back: the lease is dropped and the request asks again.
    r->pace.refund(tokens, std::chrono::steady_clock::now());
    co_return duration(pod_slot_poll);
  }
  ++r->held[worker_];
  ++r->in_flight;
  t.slot = 1;
  co_return std::nullopt;
}

void pod_budget::release(budget_ticket& t) noexcept {
  if (t.slot != 0) {
    pod_budgets::guard r(*row_);
    if (r->held[worker_] > 0) {
      --r->held[worker_];
      --r->in_flight;
    }
  }
  t = budget_ticket{};
}

std::uint64_t pod_budget::in_flight() const {
  pod_budgets::guard r(*row_);
  return r->in_flight;
}

}  // namespace sluice::routing
