// Upstream rate limits as OpenAI applies them: a requests-per-minute and a tokens-per-minute token
// bucket, each holding up to its limit and refilling continuously at limit per minute. The clock is
// a parameter (`now`), so the arithmetic is tested without sleeps. token_bucket is a plain value, not
// thread-safe; rate_limiter guards its two buckets with a mutex and is shared by every worker thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/units.hpp"

namespace sluice::sim {

using steady_time = std::chrono::steady_clock::time_point;

// Largest limit accepted (keeps the fixed-point level below 2^64).
inline constexpr std::uint64_t max_rate_limit = 1'000'000'000;

class token_bucket {
 public:
  // Starts full. limit in 1..max_rate_limit.
  token_bucket(std::uint64_t limit, steady_time now);

  std::uint64_t limit() const noexcept { return limit_; }
  // Adds what has dripped in since the last refill (a clock going backwards adds nothing).
  void refill(steady_time now) noexcept;
  // Whole units available now.
  std::uint64_t remaining() const noexcept;
  bool can_pay(std::uint64_t cost) const noexcept;
  void pay(std::uint64_t cost) noexcept;  // only after can_pay(cost)
  // Time until `cost` can be paid (zero if it can now). A cost above the limit can never be paid:
  // the answer is the time until the bucket is full.
  duration time_until(std::uint64_t cost) const noexcept;
  // Time until the bucket is back to its limit: OpenAI's x-ratelimit-reset-*.
  duration time_until_full() const noexcept;

 private:
  // The level is kept in unit-microseconds: one unit is us_per_minute of them, and the bucket gains
  // `limit` of them per microsecond, so refills stay exact integers.
  static constexpr std::uint64_t us_per_minute = 60'000'000;
  std::uint64_t limit_;
  std::uint64_t level_;
  steady_time last_;  // advanced by whole microseconds only, so no fraction of a drip is lost
};

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
std::vector<std::pair<std::string_view, std::string>> ratelimit_headers(const rate_decision& d);

// Header values: whole milliseconds and whole seconds, both rounded up.
std::uint64_t ceil_ms(duration d) noexcept;
std::uint64_t ceil_seconds(duration d) noexcept;

}  // namespace sluice::sim
