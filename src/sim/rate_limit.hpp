// Upstream rate limits as OpenAI applies them: a requests-per-minute and a tokens-per-minute token
// bucket (core/token_bucket.hpp), each holding up to its limit and refilling continuously at limit
// per minute. The clock is a parameter (`now`), so the arithmetic is tested without sleeps.
// rate_limiter guards its two buckets with a mutex and is shared by every worker thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/token_bucket.hpp"
#include "core/units.hpp"
#include "sim/request.hpp"

namespace sluice::sim {

using steady_time = std::chrono::steady_clock::time_point;

// Largest limit-rpm / limit-tpm accepted (the options' bound; the bucket itself keeps more).
inline constexpr std::uint64_t max_rate_limit = 1'000'000'000;

// One limit's figures for the x-ratelimit-{limit,remaining,reset}-{requests,tokens} headers.
struct limit_figures {
  std::uint64_t limit = 0;
  std::uint64_t remaining = 0;  // after this request was charged
  duration reset{0};            // until the bucket is full again
};

struct rate_decision {
  bool allowed = true;
  // When refused: which bucket ("requests" or "tokens"; OpenAI's error `type`) and for how long.
  std::string_view exceeded;
  duration retry_after{0};
  bool too_large = false;  // the token cost exceeds the limit itself: it can never pass
  std::uint64_t cost_tokens = 0;
  std::optional<limit_figures> requests, tokens;  // present when that limit is on
};

class rate_limiter {
 public:
  // 0 turns a limit off.
  rate_limiter(std::uint64_t rpm, std::uint64_t tpm, steady_time now);

  bool enabled() const noexcept { return requests_ || tokens_; }
  // Charges one request and `cost_tokens` tokens if both buckets can pay, else neither.
  rate_decision take(std::uint64_t cost_tokens, steady_time now);

 private:
  std::mutex mu_;
  std::optional<token_bucket> requests_, tokens_;
};

// The 429 error message OpenAI sends for a refused decision.
std::string rate_limit_message(const rate_decision& d);

// x-ratelimit-{limit,remaining,reset}-requests and -tokens for the limits that are on, in OpenAI's
// formats (integers; resets like "120ms", "1s", "1m30.5s", rounded up to whole milliseconds).
std::vector<std::pair<std::string_view, std::string>> ratelimit_headers(const rate_decision& d, api kind);

// What a request costs the tokens bucket: its prompt and the most it may generate (saturating).
std::uint64_t token_cost(const completion_request& r, const request_settings& s) noexcept;

// Header values: whole milliseconds and whole seconds, both rounded up.
std::uint64_t ceil_ms(duration d) noexcept;
std::uint64_t ceil_seconds(duration d) noexcept;

}  // namespace sluice::sim
