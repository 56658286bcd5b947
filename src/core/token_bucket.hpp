// token_bucket: up to `limit` units, starting full and refilling continuously at `limit` per minute
// (or at a faster rate an upstream announced), in exact integer arithmetic. The clock is a parameter:
// refill(now) moves the bucket to `now` and every other call answers as of the last refill. A plain
// value, not thread-safe: its owner keeps it under its own lock.
#pragma once

#include <chrono>
#include <cstdint>

#include "core/units.hpp"

namespace sluice {

class token_bucket {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  // Largest limit kept: the level, in unit-microseconds, then stays far inside 64 bits with room
  // below zero for debt (up to 2^62 unit-microseconds, about 7.7e10 units).
  static constexpr std::uint64_t max_limit = 10'000'000'000;

  // Starts full. `limit` is clamped to 1..max_limit.
  token_bucket(std::uint64_t limit, time_point now) noexcept;

  std::uint64_t limit() const noexcept { return limit_; }
  // Units per minute it refills at: limit(), unless set_rate() raised it.
  std::uint64_t rate_per_minute() const noexcept { return rate_; }

  // Adds what has dripped in since the last refill, up to the limit. Time is counted in whole
  // microseconds (a fraction waits for the next refill, so none is lost); a gap of a minute or more
  // fills a bucket that is not in debt. A clock going backwards (or standing still) adds nothing and
  // moves nothing.
  void refill(time_point now) noexcept;

  // Whole units available now; 0 while in debt.
  std::uint64_t remaining() const noexcept;
  // The exact level in units, fractional, negative while in debt: for gauges and snapshots.
  double level() const noexcept;

  // True when `cost` units are there now. A cost above the limit never is: a bucket that refuses
  // such a cost outright (OpenAI's "request too large") asks this.
  bool can_take(std::uint64_t cost) const noexcept;
  // Takes `cost` if can_take(cost); else takes nothing.
  bool try_take(std::uint64_t cost) noexcept;
  // Takes `cost` unconditionally: the level may go below zero, a debt that later refills pay off
  // first. For a reservation let through on time_until() == 0, and for a usage above its estimate.
  void take(std::uint64_t cost) noexcept;
  // Returns `amount` units (a refund, an over-estimate settled), never beyond the limit.
  void give_back(std::uint64_t amount) noexcept;
  // Lowers the level to `units` if it is above (an upstream's own `remaining`); never raises it.
  void lower_to(std::uint64_t units) noexcept;

  // A new limit (learned from an upstream): the rate goes back to the limit per minute and the
  // level is clamped to the new limit; a higher limit does not fill the bucket.
  void set_limit(std::uint64_t limit) noexcept;
  // Refill at `per_minute` units per minute, never slower than limit() per minute (a lower value
  // means the limit's own rate) nor faster than a full bucket per microsecond.
  void set_rate(std::uint64_t per_minute) noexcept;

  // Time until min(cost, limit) units are there (zero if they are now; while in debt, a cost of 0
  // waits for the debt to be paid). A cost above the limit gets the time until the bucket is full:
  // a bucket that lets such a cost go into debt treats zero here as "it fits". Rounded up to the
  // microsecond.
  duration time_until(std::uint64_t cost) const noexcept;
  // Time until the bucket is back to its limit: OpenAI's x-ratelimit-reset-*.
  duration time_until_full() const noexcept { return time_until(limit_); }

 private:
  // One unit is us_per_minute unit-microseconds and the bucket gains rate_ of them per microsecond
  // (limit per minute by default), so every refill is an exact integer step.
  static constexpr std::int64_t us_per_minute = 60'000'000;
  // The deepest debt kept; far beyond any real reservation, it only keeps the arithmetic in range.
  static constexpr std::int64_t min_level = -(std::int64_t{1} << 62);

  std::int64_t full() const noexcept { return static_cast<std::int64_t>(limit_) * us_per_minute; }

  std::uint64_t limit_;
  std::uint64_t rate_;  // unit-microseconds gained per microsecond = units per minute
  std::int64_t level_;  // unit-microseconds, min_level..full()
  time_point last_;     // advanced by whole microseconds only, so no fraction of a drip is lost
};

}  // namespace sluice
