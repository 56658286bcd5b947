#include "routing/shared_budget.hpp"

#include <array>

#include "observability/log.hpp"
#include "redis/buckets.hpp"

namespace sluice::routing {

namespace {

// A request refused for want of a concurrency slot polls again this soon (a slot frees when any
// replica's stream ends; nobody can say when).
constexpr auto slot_poll = std::chrono::milliseconds(50);
// `closed` mode: a pick Redis cannot confirm waits this long (then the request's hold gives up as
// for any spent budget).
constexpr auto closed_wait = std::chrono::seconds(1);

std::uint64_t share_of(std::uint64_t limit, std::uint64_t n) { return limit == 0 ? 0 : (limit + n - 1) / n; }

std::string whole(double v) { return std::to_string(v > 0 ? static_cast<std::uint64_t>(v) : 0); }

}  // namespace

std::vector<redis::script> shared_budget_context::scripts() {
  return {redis::bucket_admit_script("upstream_admit"), redis::bucket_settle_script("upstream_settle"),
          redis::bucket_observe_script("upstream_observe")};
}

shared_budget::shared_budget(const upstream_spec& spec, time_point now, shared_budget_context& ctx)
    : spec_(spec),
      ctx_(ctx),
      view_(spec.requests_per_minute, spec.tokens_per_minute, now),
      share_(share_of(spec.requests_per_minute, ctx.opts.fallback_replicas),
             share_of(spec.tokens_per_minute, ctx.opts.fallback_replicas), now),
      share_slots_(share_of(spec.max_concurrent, ctx.opts.fallback_replicas)),
      bucket_(redis::bucket_key(ctx.opts.key_prefix, "u", spec.name, "b")),
      slots_(redis::bucket_key(ctx.opts.key_prefix, "u", spec.name, "s")) {}

bool shared_budget::shared() const noexcept {
  return ctx_.client != nullptr && (spec_.max_concurrent != 0 || view_.has_token_budget() ||
                                    view_.snapshot(std::chrono::steady_clock::now()).requests_limit > 0);
}

std::pair<std::string, std::string> shared_budget::limits_now(time_point now) {
  // The limits as this replica knows them (configured, or learned from the upstream's headers).
  const auto snap = view_.snapshot(now);
  return {whole(snap.requests_limit), whole(snap.tokens_limit)};
}

task<std::optional<duration>> shared_budget::confirm(std::uint64_t tokens, budget_ticket& t) {
  redis::connection* c = ctx_.client ? ctx_.client->current() : nullptr;
  if (c == nullptr) co_return co_await confirm_alone(tokens, t, redis::outcome::disconnected);
  const auto now = std::chrono::steady_clock::now();
  const auto [rpm, tpm] = limits_now(now);
  const std::uint64_t id = spec_.max_concurrent != 0 ? ctx_.leases.next_id() : 0;
  const std::string member = id != 0 ? ctx_.leases.member(id) : std::string();
  const std::string max = std::to_string(spec_.max_concurrent), cost = std::to_string(tokens),
                    lease = std::to_string(ctx_.leases.lease_ms());
  const std::array<std::string_view, 2> keys{bucket_, slots_};
  const std::array<std::string_view, 6> args{rpm, tpm, max, cost, member, lease};
  redis::response r = co_await c->run(ctx_.admit_script, keys, args);
  std::optional<redis::bucket_reply> got;
  if (r.ok()) got = redis::parse_bucket_admit(r.value);
  if (!got) {
    // A run that timed out may still have taken a slot: removed once Redis answers again.
    if (id != 0 && r.status != redis::outcome::disconnected && r.status != redis::outcome::overloaded)
      spawn(ctx_.settle_script, {bucket_, slots_}, {rpm, tpm, "0", member});
    if (r.ok()) obs::log_error("bug: upstream_admit answered something unexpected", {{"reply", r.value.describe()}});
    co_return co_await confirm_alone(tokens, t, r.ok() ? redis::outcome::protocol_error : r.status);
  }
  ctx_.availability.answered();
  const auto after = std::chrono::steady_clock::now();
  // The view comes down to what the fleet has left (it already holds this reservation).
  ratelimit_headers left;
  if (rpm != "0") left.remaining_requests = static_cast<double>(got->requests_left);
  if (tpm != "0") left.remaining_tokens = static_cast<double>(got->tokens_left);
  if (got->verdict == redis::bucket_verdict::admitted) {
    view_.observe(left, after);
    t.in_redis = true;
    if (id != 0) {
      t.slot = id;
      ctx_.leases.hold(slots_, id);
    }
    co_return std::nullopt;
  }
  view_.refund(tokens, after);
  view_.observe(left, after);
  if (got->verdict == redis::bucket_verdict::concurrency) co_return duration(slot_poll);
  // Spent (or blocked) for the fleet: the view holds every pick until then.
  const duration wait = std::chrono::milliseconds(std::max<std::int64_t>(got->wait_ms, 1));
  view_.block_until(after + wait);
  co_return wait;
}

task<std::optional<duration>> shared_budget::confirm_alone(std::uint64_t tokens, budget_ticket& t, redis::outcome why) {
  ctx_.availability.failed(redis::shared_limit::upstream, why);
  const auto now = std::chrono::steady_clock::now();
  if (ctx_.availability.mode() == redis::failure_mode::closed) {
    view_.refund(tokens, now);
    co_return duration(closed_wait);
  }
  if (share_slots_ != 0 && share_in_use_.fetch_add(1, std::memory_order_acq_rel) >= share_slots_) {
    share_in_use_.fetch_sub(1, std::memory_order_acq_rel);
    view_.refund(tokens, now);
    co_return duration(slot_poll);
  }
  if (auto wait = share_.try_reserve(tokens, now)) {
    if (share_slots_ != 0) share_in_use_.fetch_sub(1, std::memory_order_acq_rel);
    view_.refund(tokens, now);
    co_return wait;
  }
  t.in_share = true;
  t.share_slot = share_slots_ != 0;
  co_return std::nullopt;
}

void shared_budget::release(budget_ticket& t) noexcept {
  const auto now = std::chrono::steady_clock::now();
  if (t.in_share) {  // the same corrections the view had, on this replica's share
    for (std::uint64_t i = 0; i < t.requests_back; ++i) share_.refund(0, now);
    const std::uint64_t more = t.token_delta > 0 ? static_cast<std::uint64_t>(t.token_delta) : 0;
    const std::uint64_t less = t.token_delta < 0 ? static_cast<std::uint64_t>(-t.token_delta) : 0;
    if (more != less) share_.settle(less, more, now);
  }
  if (t.share_slot) share_in_use_.fetch_sub(1, std::memory_order_acq_rel);
  if (t.in_redis && (t.slot != 0 || t.token_delta != 0 || t.requests_back != 0)) {
    auto [rpm, tpm] = limits_now(now);
    if (t.slot != 0) ctx_.leases.drop(slots_, t.slot);
    spawn(ctx_.settle_script, {bucket_, slots_},
          {std::move(rpm), std::move(tpm), std::to_string(t.token_delta),
           t.slot != 0 ? ctx_.leases.member(t.slot) : std::string(), std::to_string(t.requests_back)});
  }
  t = budget_ticket{};
}

void shared_budget::observe(const ratelimit_headers& h, time_point now) {
  view_.observe(h, now);
  share_.observe(h, now);
  if (ctx_.client == nullptr || (!h.remaining_requests && !h.remaining_tokens && !h.retry_after)) return;
  auto [rpm, tpm] = limits_now(now);
  auto count = [](const std::optional<double>& v) { return v ? whole(*v) : std::string(); };
  const std::string block =
      h.retry_after ? std::to_string(std::chrono::ceil<std::chrono::milliseconds>(*h.retry_after).count()) : "";
  spawn(ctx_.observe_script, {bucket_}, {std::move(rpm), std::move(tpm), count(h.remaining_requests),
                                         count(h.remaining_tokens), block});
}

void shared_budget::block_until(time_point until) {
  view_.block_until(until);
  share_.block_until(until);
  const auto now = std::chrono::steady_clock::now();
  if (ctx_.client == nullptr || until <= now) return;
  auto [rpm, tpm] = limits_now(now);
  spawn(ctx_.observe_script, {bucket_},
        {std::move(rpm), std::move(tpm), "", "",
         std::to_string(std::chrono::ceil<std::chrono::milliseconds>(until - now).count())});
}

void shared_budget::spawn(std::size_t script, std::vector<std::string> keys, std::vector<std::string> args) noexcept {
  redis::client* client = ctx_.client;
  if (client == nullptr || client->size() == 0) return;
  try {
    redis::connection* c = client->current();
    if (c == nullptr) c = &client->on(0);
    ctx_.tasks.spawn(c->executor(), run_script(c->shared_from_this(), script, std::move(keys), std::move(args)),
                     "upstream budget update");
  } catch (...) {
    // No memory for a coroutine frame: the update is lost; a slot frees with its lease.
  }
}

task<void> shared_budget::run_script(std::shared_ptr<redis::connection> c, std::size_t index,
                                     std::vector<std::string> keys, std::vector<std::string> args) {
  std::vector<std::string_view> k(keys.begin(), keys.end()), a(args.begin(), args.end());
  redis::response r = co_await c->run(index, k, a);
  if (r.ok()) ctx_.availability.answered();
}

}  // namespace sluice::routing
