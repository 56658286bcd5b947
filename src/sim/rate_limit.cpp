#include "sim/rate_limit.hpp"

#include <algorithm>

#include "sim/content.hpp"

namespace sluice::sim {

using std::chrono::microseconds;
using std::chrono::milliseconds;

token_bucket::token_bucket(std::uint64_t limit, steady_time now)
    : limit_(std::clamp<std::uint64_t>(limit, 1, max_rate_limit)), level_(limit_ * us_per_minute), last_(now) {}

void token_bucket::refill(steady_time now) noexcept {
  if (now <= last_) return;
  const auto elapsed = std::chrono::duration_cast<microseconds>(now - last_).count();
  const std::uint64_t full = limit_ * us_per_minute;
  if (static_cast<std::uint64_t>(elapsed) >= us_per_minute) {  // a whole minute refills any bucket
    level_ = full;
    last_ = now;
    return;
  }
  // elapsed < 6e7 and limit <= 1e9: the product stays far below 2^64.
  level_ = std::min(full, level_ + static_cast<std::uint64_t>(elapsed) * limit_);
  last_ += microseconds(elapsed);
}

std::uint64_t token_bucket::remaining() const noexcept { return level_ / us_per_minute; }

bool token_bucket::can_pay(std::uint64_t cost) const noexcept {
  return cost <= limit_ && cost * us_per_minute <= level_;
}

void token_bucket::pay(std::uint64_t cost) noexcept { level_ -= std::min(level_, cost * us_per_minute); }

duration token_bucket::time_until(std::uint64_t cost) const noexcept {
  const std::uint64_t need = std::min(cost, limit_) * us_per_minute;
  if (level_ >= need) return duration::zero();
  return microseconds((need - level_ + limit_ - 1) / limit_);
}

duration token_bucket::time_until_full() const noexcept { return time_until(limit_); }

rate_limiter::rate_limiter(std::uint64_t rpm, std::uint64_t tpm, steady_time now) {
  if (rpm > 0) requests_.emplace(rpm, now);
  if (tpm > 0) tokens_.emplace(tpm, now);
}

rate_decision rate_limiter::take(std::uint64_t cost_tokens, steady_time now) {
  rate_decision d;
  d.cost_tokens = cost_tokens;
  std::lock_guard lock(mu_);
  if (requests_) requests_->refill(now);
  if (tokens_) tokens_->refill(now);
  const bool requests_ok = !requests_ || requests_->can_pay(1);
  const bool tokens_ok = !tokens_ || tokens_->can_pay(cost_tokens);
  if (requests_ok && tokens_ok) {
    if (requests_) requests_->pay(1);
    if (tokens_) tokens_->pay(cost_tokens);
  } else {
    d.allowed = false;
    d.too_large = tokens_ && cost_tokens > tokens_->limit();
    const duration wait_requests = requests_ok ? duration::zero() : requests_->time_until(1);
    const duration wait_tokens = tokens_ok ? duration::zero() : tokens_->time_until(cost_tokens);
    // The longer wait is the one that decides when a retry can pass.
    d.exceeded = !requests_ok && (tokens_ok || wait_requests >= wait_tokens) ? "requests" : "tokens";
    // A too-large request with a full bucket would say 0: still ask for a pause, never a hot loop.
    d.retry_after = std::max<duration>({wait_requests, wait_tokens, milliseconds(1)});
  }
  if (requests_) d.requests = limit_figures{requests_->limit(), requests_->remaining(), requests_->time_until_full()};
  if (tokens_) d.tokens = limit_figures{tokens_->limit(), tokens_->remaining(), tokens_->time_until_full()};
  return d;
}

std::uint64_t ceil_ms(duration d) noexcept {
  if (d <= duration::zero()) return 0;
  return static_cast<std::uint64_t>((d.count() + 999'999) / 1'000'000);
}

std::uint64_t ceil_seconds(duration d) noexcept { return (ceil_ms(d) + 999) / 1000; }

std::vector<std::pair<std::string_view, std::string>> ratelimit_headers(const rate_decision& d) {
  std::vector<std::pair<std::string_view, std::string>> out;
  auto add = [&out](const std::optional<limit_figures>& f, std::string_view limit, std::string_view remaining,
                    std::string_view reset) {
    if (!f) return;
    out.emplace_back(limit, std::to_string(f->limit));
    out.emplace_back(remaining, std::to_string(f->remaining));
    out.emplace_back(reset, openai_reset_format(milliseconds(ceil_ms(f->reset))));
  };
  add(d.requests, "x-ratelimit-limit-requests", "x-ratelimit-remaining-requests", "x-ratelimit-reset-requests");
  add(d.tokens, "x-ratelimit-limit-tokens", "x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens");
  return out;
}

std::string rate_limit_message(const rate_decision& d) {
  const bool requests = d.exceeded == "requests";
  const auto& f = requests ? d.requests : d.tokens;
  const std::uint64_t limit = f ? f->limit : 0;
  const std::uint64_t used = f ? f->limit - std::min(f->limit, f->remaining) : 0;
  const std::string unit = requests ? "requests per min (RPM)" : "tokens per min (TPM)";
  if (!requests && d.too_large)
    return "Request too large for " + unit + ": Limit " + std::to_string(limit) + ", Requested " +
           std::to_string(d.cost_tokens) + ". The input or output tokens must be reduced in order to run successfully.";
  return "Rate limit reached for " + unit + ": Limit " + std::to_string(limit) + ", Used " + std::to_string(used) +
         ", Requested " + std::to_string(requests ? 1 : d.cost_tokens) + ". Please try again in " +
         openai_reset_format(milliseconds(ceil_ms(d.retry_after))) + ".";
}

}  // namespace sluice::sim
