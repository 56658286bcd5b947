#include "routing/pacer.hpp"

#include <algorithm>

namespace sluice::routing {
namespace {

// A header's count as whole units: a fraction is rounded down (the cautious side for a limit and
// for a remaining), anything beyond what a bucket keeps is the most it keeps.
std::uint64_t whole_units(double v) {
  if (!(v > 0)) return 0;
  return v >= static_cast<double>(token_bucket::max_limit) ? token_bucket::max_limit : static_cast<std::uint64_t>(v);
}

// An upstream telling a limit: learned (the bucket starts full, like a fresh upstream's) or changed.
void learn(std::optional<token_bucket>& b, const std::optional<double>& limit, time_point now) {
  if (!limit || !(*limit > 0)) return;
  if (b) b->set_limit(whole_units(*limit));
  else b.emplace(whole_units(*limit), now);
}

// The upstream's count is the truth it will enforce; ours may only be lower (requests we have
// sent since that response was produced are already charged here, not yet there).
void lower(std::optional<token_bucket>& b, const std::optional<double>& remaining) {
  if (b && remaining) b->lower_to(whole_units(*remaining));
}

// "Full again in <reset>": refill at least that fast (a per-minute limit refills over a minute,
// but an upstream may say it recovers sooner).
void pace_from(std::optional<token_bucket>& b, const std::optional<double>& remaining,
               const std::optional<duration>& reset) {
  if (!b || !remaining || !reset || reset->count() <= 0) return;
  const double limit = static_cast<double>(b->limit());
  const double reset_s = std::chrono::duration<double>(*reset).count();
  const double per_minute = (limit - std::min(*remaining, limit)) * 60.0 / reset_s;
  // Within 10% of the per-minute rate is rounding in the reset text, not a faster upstream:
  // erring fast by a hair would let a request through that the upstream then refuses. Rounded
  // down to whole units per minute for the same reason; set_rate caps what is absurdly fast.
  const double fastest = static_cast<double>(token_bucket::max_limit) * 60e6;
  b->set_rate(per_minute > 1.1 * limit ? static_cast<std::uint64_t>(std::min(per_minute, fastest)) : b->limit());
}

}  // namespace

task<std::optional<duration>> rate_budget::confirm(std::uint64_t, budget_ticket&) { co_return std::nullopt; }

void rate_budget::release(budget_ticket&) noexcept {}

pacer_state::pacer_state(std::uint64_t rpm, std::uint64_t tpm, time_point now) {
  if (rpm) requests.emplace(rpm, now);
  if (tpm) tokens.emplace(tpm, now);
}

void pacer_state::refill(time_point now) {
  if (requests) requests->refill(now);
  if (tokens) tokens->refill(now);
}

duration pacer_state::wait(std::uint64_t cost, time_point now) const {
  duration w = duration::zero();
  if (requests) w = std::max(w, requests->time_until(1));
  // A cost above the whole limit waits for a full bucket only, then goes into debt (below): the
  // cost is an estimate (max_tokens is a ceiling, not a use), so whether the request is too large
  // is for the upstream to say; the debt then holds back what follows. (The simulator, playing
  // the upstream, refuses such a cost outright: can_take rather than time_until.)
  if (tokens) w = std::max(w, tokens->time_until(cost));
  if (blocked_until > now) w = std::max<duration>(w, blocked_until - now);
  return w;
}

std::optional<duration> pacer_state::try_reserve(std::uint64_t cost, time_point now) {
  refill(now);
  auto w = wait(cost, now);
  if (w > duration::zero()) return w;
  if (requests) requests->take(1);
  if (tokens) tokens->take(cost);  // may go below 0 for a big one
  return std::nullopt;
}

std::optional<duration> pacer_state::wait_time(std::uint64_t cost, time_point now) {
  refill(now);
  auto w = wait(cost, now);
  if (w <= duration::zero()) return std::nullopt;
  return w;
}

void pacer_state::refund(std::uint64_t cost, time_point now) {
  refill(now);
  if (requests) requests->give_back(1);
  if (tokens) tokens->give_back(cost);
}

void pacer_state::settle(std::uint64_t estimated, std::uint64_t actual, time_point now) {
  refill(now);
  if (!tokens) return;
  if (actual > estimated) tokens->take(actual - estimated);
  else tokens->give_back(estimated - actual);
}

void pacer_state::observe(const ratelimit_headers& h, time_point now) {
  refill(now);
  learn(requests, h.limit_requests, now);
  learn(tokens, h.limit_tokens, now);
  lower(requests, h.remaining_requests);
  lower(tokens, h.remaining_tokens);
  pace_from(requests, h.remaining_requests, h.reset_requests);
  pace_from(tokens, h.remaining_tokens, h.reset_tokens);
  if (h.retry_after) blocked_until = std::max(blocked_until, now + *h.retry_after);
}

void pacer_state::block_until(time_point until) { blocked_until = std::max(blocked_until, until); }

pacer_snapshot pacer_state::snapshot(time_point now) {
  refill(now);
  auto limit = [](const std::optional<token_bucket>& b) { return b ? static_cast<double>(b->limit()) : 0.0; };
  auto level = [](const std::optional<token_bucket>& b) { return b ? b->level() : 0.0; };
  return {limit(requests), level(requests), limit(tokens), level(tokens), blocked_until};
}

pacer::pacer(std::uint64_t rpm, std::uint64_t tpm, time_point now) : st_(rpm, tpm, now) {}

std::optional<duration> pacer::try_reserve(std::uint64_t tokens, time_point now) {
  std::lock_guard lk(mu_);
  return st_.try_reserve(tokens, now);
}

std::optional<duration> pacer::wait_time(std::uint64_t tokens, time_point now) {
  std::lock_guard lk(mu_);
  return st_.wait_time(tokens, now);
}

void pacer::refund(std::uint64_t tokens, time_point now) {
  std::lock_guard lk(mu_);
  st_.refund(tokens, now);
}

void pacer::settle(std::uint64_t estimated, std::uint64_t actual, time_point now) {
  std::lock_guard lk(mu_);
  st_.settle(estimated, actual, now);
}

void pacer::observe(const ratelimit_headers& h, time_point now) {
  std::lock_guard lk(mu_);
  st_.observe(h, now);
}

void pacer::block_until(time_point until) {
  std::lock_guard lk(mu_);
  st_.block_until(until);
}

bool pacer::has_token_budget() const {
  std::lock_guard lk(mu_);
  return st_.has_token_budget();
}

pacer_snapshot pacer::snapshot(time_point now) {
  std::lock_guard lk(mu_);
  return st_.snapshot(now);
}

}  // namespace sluice::routing
