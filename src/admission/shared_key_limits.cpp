#include "admission/shared_key_limits.hpp"

#include <array>

#include "observability/log.hpp"
#include "redis/buckets.hpp"

namespace sluice::admission {

namespace {

std::chrono::seconds retry_seconds(std::int64_t ms) {
  return std::chrono::seconds(std::max<std::int64_t>(1, (ms + 999) / 1000));
}

}  // namespace

std::string key_bucket_key(std::string_view prefix, std::string_view name) {
  return redis::bucket_key(prefix, "k", name, "b");
}
std::string key_slots_key(std::string_view prefix, std::string_view name) {
  return redis::bucket_key(prefix, "k", name, "s");
}

shared_key_limits::shared_key_limits(client_keys keys, const redis::options& o, redis::availability& av,
                                     redis::lease_keeper& leases)
    : keys_(std::move(keys)),
      fallback_(keys_.divided(o.fallback_replicas)),
      availability_(av),
      leases_(leases),
      replicas_(std::max<std::uint64_t>(1, o.fallback_replicas)),
      settles_("shared key settles") {
  for (std::size_t i = 0; i < keys_.size(); ++i) {
    const auto name = keys_.at(i).name();
    buckets_.push_back(key_bucket_key(o.key_prefix, name));
    slots_.push_back(key_slots_key(o.key_prefix, name));
    carried_.push_back(std::make_unique<carried>(keys_.at(i).rpm(), keys_.at(i).tpm()));
  }
}

shared_key_limits::~shared_key_limits() = default;

std::vector<redis::script> shared_key_limits::scripts() {
  return {redis::bucket_admit_script("key_admit"), redis::bucket_settle_script("key_settle"),
          redis::bucket_observe_script("key_observe")};
}

void shared_key_limits::attach(redis::client& c, std::size_t first_script) {
  client_ = &c;
  admit_ = first_script;
  settle_ = first_script + 1;
  observe_ = first_script + 2;
}

std::optional<key_decision> shared_key_limits::try_acquire_now(const key_handle& key, std::uint64_t tokens) {
  if (key.max_streams() == 0 && key.rpm() == 0 && key.tpm() == 0) return keys_.decide(key, tokens);
  return std::nullopt;
}

key_decision shared_key_limits::fallback(std::size_t index, std::uint64_t tokens, redis::outcome why) {
  availability_.failed(redis::shared_limit::client_key, why);
  if (availability_.mode() == redis::failure_mode::closed)
    return rate_refusal{rate_limit_kind::unavailable, std::chrono::seconds(1), {}};
  auto& k = *carried_[index];
  std::lock_guard lock(k.mu);
  // The switch: this replica's share starts from what the fleet had left, not full.
  if (k.carry.deciding_alone())
    if (auto left = k.carry.fleet_left(fallback_carry::clock::now()))
      fallback_.lower_to(index, static_cast<std::uint64_t>(left->requests / static_cast<double>(replicas_)),
                         static_cast<std::uint64_t>(left->tokens / static_cast<double>(replicas_)));
  // The key's streams this replica admitted through Redis still run: they count here too.
  auto d = fallback_.decide(fallback_.at(index), tokens, keys_.at(index).in_use());
  if (std::holds_alternative<key_permit>(d)) k.carry.admitted_alone(tokens);
  return d;
}

task<std::optional<redis::outcome>> shared_key_limits::come_back(redis::connection& c, std::size_t index) {
  std::optional<fallback_carry::levels> back;
  {
    std::lock_guard lock(carried_[index]->mu);
    if (carried_[index]->carry.alone()) back = carried_[index]->carry.coming_back(fallback_carry::clock::now());
  }
  if (!back) co_return std::nullopt;
  const key_handle key = keys_.at(index);
  // '' for a limit the key does not have: key_observe leaves that bucket alone.
  const auto level = [](std::uint64_t limit, double left) {
    return limit != 0 ? std::to_string(static_cast<std::uint64_t>(left)) : std::string();
  };
  const std::string rpm = std::to_string(key.rpm()), tpm = std::to_string(key.tpm()),
                    requests = level(key.rpm(), back->requests), tokens = level(key.tpm(), back->tokens), no_block;
  const std::array<std::string_view, 1> keys{buckets_[index]};
  const std::array<std::string_view, 5> args{rpm, tpm, requests, tokens, no_block};
  redis::response r = co_await c.run(observe_, keys, args);
  if (!r.ok()) co_return r.status;
  availability_.answered();
  co_return std::nullopt;  // (still alone() until an admission's answer: a failed one decides alone on)
}

void shared_key_limits::remember(std::size_t index, const redis::bucket_reply& got) {
  std::lock_guard lock(carried_[index]->mu);
  carried_[index]->carry.answered({static_cast<double>(got.requests_left), static_cast<double>(got.tokens_left)},
                                  fallback_carry::clock::now());
}

task<key_decision> shared_key_limits::acquire(const key_handle& key, std::uint64_t tokens) {
  const std::size_t i = key.index();
  redis::connection* c = client_ ? client_->current() : nullptr;
  if (c == nullptr) co_return fallback(i, tokens, redis::outcome::disconnected);  // not on a worker thread
  if (auto why = co_await come_back(*c, i)) co_return fallback(i, tokens, *why);
  // The key's streams this replica admitted alone still run: Redis counts them against max_streams.
  const std::uint64_t alone = fallback_.at(i).in_use();
  if (key.max_streams() != 0 && alone >= key.max_streams())
    co_return rate_refusal{rate_limit_kind::concurrency, std::chrono::seconds(1), {}};

  const std::uint64_t id = key.max_streams() != 0 ? leases_.next_id() : 0;
  const std::string member = id != 0 ? leases_.member(id) : std::string();
  const std::string rpm = std::to_string(key.rpm()), tpm = std::to_string(key.tpm()),
                    max_streams = std::to_string(key.max_streams() != 0 ? key.max_streams() - alone : 0),
                    cost = std::to_string(tokens), lease = std::to_string(leases_.lease_ms());
  const std::array<std::string_view, 2> keys{buckets_[i], slots_[i]};
  const std::array<std::string_view, 6> args{rpm, tpm, max_streams, cost, member, lease};
  redis::response r = co_await c->run(admit_, keys, args);
  std::optional<redis::bucket_reply> got;
  if (r.ok()) got = redis::parse_bucket_admit(r.value);
  if (!got) {
    // A run that timed out may still have taken a slot: give it back when Redis answers again
    // (it would otherwise hold until its lease ran out). Its tokens stay charged: the strict side.
    if (id != 0 && r.status != redis::outcome::disconnected && r.status != redis::outcome::overloaded)
      spawn_settle(i, member, 0);
    if (r.ok()) {
      obs::log_error("bug: key_admit answered something unexpected", {{"reply", r.value.describe()}});
      co_return fallback(i, tokens, redis::outcome::protocol_error);
    }
    co_return fallback(i, tokens, r.status);
  }
  availability_.answered();
  remember(i, *got);
  auto headers = client_keys::make_headers(key.rpm(), static_cast<double>(got->requests_left),
                                           std::chrono::milliseconds(got->requests_reset_ms), key.tpm(),
                                           static_cast<double>(got->tokens_left),
                                           std::chrono::milliseconds(got->tokens_reset_ms));
  switch (got->verdict) {
    case redis::bucket_verdict::admitted: break;
    case redis::bucket_verdict::concurrency:
      co_return rate_refusal{rate_limit_kind::concurrency, retry_seconds(got->wait_ms), std::move(headers)};
    case redis::bucket_verdict::tokens:
      co_return rate_refusal{rate_limit_kind::tpm, retry_seconds(got->wait_ms), std::move(headers)};
    case redis::bucket_verdict::requests:
    case redis::bucket_verdict::blocked:  // a key is never blocked; were it, it is out of requests
      co_return rate_refusal{rate_limit_kind::rpm, retry_seconds(got->wait_ms), std::move(headers)};
  }
  if (id != 0) leases_.hold(slots_[i], id);
  auto& e = entry_of(key);
  e.in_use.fetch_add(1, std::memory_order_acq_rel);  // this replica's share, for key_handle::in_use()
  co_return make_permit(e, std::move(headers), permit_usage{id, key.tpm() != 0 ? tokens : 0, std::nullopt});
}

void shared_key_limits::release(detail::key_entry& e, const permit_usage& u) noexcept {
  e.in_use.fetch_sub(1, std::memory_order_acq_rel);
  const std::int64_t delta =
      u.used_tokens ? static_cast<std::int64_t>(*u.used_tokens) - static_cast<std::int64_t>(u.reserved_tokens) : 0;
  if (u.lease == 0 && (e.tpm == 0 || delta == 0)) return;  // nothing to tell Redis
  if (u.lease != 0) leases_.drop(slots_[e.index], u.lease);
  spawn_settle(e.index, u.lease != 0 ? leases_.member(u.lease) : std::string(), e.tpm != 0 ? delta : 0);
}

void shared_key_limits::spawn_settle(std::size_t index, std::string member, std::int64_t delta) noexcept {
  if (client_ == nullptr || client_->size() == 0) return;
  try {
    // On the ending request's own thread and connection; off the pool (tests, shutdown), on the
    // first worker's.
    redis::connection* c = client_->current();
    if (c == nullptr) c = &client_->on(0);
    settles_.spawn(c->executor(), settle(c->shared_from_this(), index, std::move(member), delta), "key settle");
  } catch (...) {
    // Out of memory for a coroutine frame: the slot frees when its lease runs out.
  }
}

task<void> shared_key_limits::settle(std::shared_ptr<redis::connection> c, std::size_t index, std::string member, std::int64_t delta) {
  const std::string rpm = std::to_string(keys_.at(index).rpm()), tpm = std::to_string(keys_.at(index).tpm()),
                    d = std::to_string(delta);
  const std::array<std::string_view, 2> keys{buckets_[index], slots_[index]};
  const std::array<std::string_view, 4> args{rpm, tpm, d, member};
  redis::response r = co_await c->run(settle_, keys, args);
  // A settle Redis could not take leaves the slot to expire with its lease and the tokens charged
  // as estimated: the strict side. It is counted (sluice_redis_commands_total{script="key_settle"}).
  if (r.ok()) availability_.answered();
}

}  // namespace sluice::admission
