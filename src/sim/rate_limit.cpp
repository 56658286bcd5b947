#include "sim/rate_limit.hpp"

#include <algorithm>
#include <limits>

#include "core/openai_duration.hpp"
#include "core/rfc3339.hpp"

namespace sluice::sim {

using std::chrono::milliseconds;

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
  // can_take, not time_until: a token cost above the limit is refused outright, as OpenAI refuses
  // a request too large for its TPM (the gateway's pacer lets one go into debt instead).
  const bool requests_ok = !requests_ || requests_->can_take(1);
  const bool tokens_ok = !tokens_ || tokens_->can_take(cost_tokens);
  if (requests_ok && tokens_ok) {
    if (requests_) requests_->take(1);
    if (tokens_) tokens_->take(cost_tokens);
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

std::uint64_t token_cost(const completion_request& r, const request_settings& s) noexcept {
  constexpr auto most = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t out = r.max_tokens ? *r.max_tokens : s.tokens;
  out = out > most / r.n ? most : out * r.n;  // every choice may use them
  return out > most - r.prompt_tokens ? most : r.prompt_tokens + out;
}

std::uint64_t ceil_ms(duration d) noexcept {
  if (d <= duration::zero()) return 0;
  return static_cast<std::uint64_t>((d.count() + 999'999) / 1'000'000);
}

std::uint64_t ceil_seconds(duration d) noexcept { return (ceil_ms(d) + 999) / 1000; }

std::vector<std::pair<std::string_view, std::string>> ratelimit_headers(const rate_decision& d, api kind) {
  std::vector<std::pair<std::string_view, std::string>> out;
  const bool anthropic = kind == api::messages;
  const auto now = std::chrono::system_clock::now();
  auto add = [&](const std::optional<limit_figures>& f, std::string_view limit, std::string_view remaining,
                 std::string_view reset) {
    if (!f) return;
    out.emplace_back(limit, std::to_string(f->limit));
    out.emplace_back(remaining, std::to_string(f->remaining));
    // OpenAI says how long until the reset, Anthropic when (RFC 3339).
    out.emplace_back(reset, anthropic ? format_rfc3339(now + std::chrono::duration_cast<std::chrono::system_clock::duration>(f->reset))
                                      : format_openai_duration(f->reset));
  };
  if (anthropic) {
    add(d.requests, "anthropic-ratelimit-requests-limit", "anthropic-ratelimit-requests-remaining",
        "anthropic-ratelimit-requests-reset");
    add(d.tokens, "anthropic-ratelimit-tokens-limit", "anthropic-ratelimit-tokens-remaining",
        "anthropic-ratelimit-tokens-reset");
    return out;
  }
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
         format_openai_duration(d.retry_after) + ".";
}

}  // namespace sluice::sim
