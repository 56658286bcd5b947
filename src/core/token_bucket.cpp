#include "core/token_bucket.hpp"

#include <algorithm>

namespace sluice {
namespace {

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) noexcept {
  return (a + b - 1) / b;
}

}  // namespace

token_bucket::token_bucket(std::uint64_t limit, time_point now) noexcept
    : limit_(std::clamp<std::uint64_t>(limit, 1, max_limit)), rate_(limit_), level_(full()), last_(now) {}

void token_bucket::refill(time_point now) noexcept {
  if (now <= last_) return;
  const auto elapsed = std::chrono::duration_cast<std::chrono::microseconds>(now - last_);
  if (elapsed >= std::chrono::minutes(1) && level_ >= 0) {  // a minute refills any bucket not in debt
    level_ = full();
    last_ = now;
    return;
  }
  last_ += elapsed;
  const auto us = static_cast<std::uint64_t>(elapsed.count());
  const auto need = static_cast<std::uint64_t>(full() - level_);
  if (need == 0) return;
  // Compared by division first: us * rate_ may not fit in 64 bits, but then it fills the bucket.
  // need and rate_ are both below 2^63, so the sum in ceil_div cannot wrap.
  if (us >= ceil_div(need, rate_)) {
    level_ = full();
  } else {
    level_ += static_cast<std::int64_t>(us * rate_);
  }
}

std::uint64_t token_bucket::remaining() const noexcept {
  return level_ <= 0 ? 0 : static_cast<std::uint64_t>(level_ / us_per_minute);
}

double token_bucket::level() const noexcept {
  return static_cast<double>(level_) / static_cast<double>(us_per_minute);
}

bool token_bucket::can_take(std::uint64_t cost) const noexcept {
  return cost <= limit_ && static_cast<std::int64_t>(cost) * us_per_minute <= level_;
}

bool token_bucket::try_take(std::uint64_t cost) noexcept {
  if (!can_take(cost)) return false;
  take(cost);
  return true;
}

void token_bucket::take(std::uint64_t cost) noexcept {
  const auto room = static_cast<std::uint64_t>(level_ - min_level);
  if (cost > room / us_per_minute) {
    level_ = min_level;  // saturated: a debt this deep outlives any caller in any case
  } else {
    level_ -= static_cast<std::int64_t>(cost) * us_per_minute;
  }
}

void token_bucket::give_back(std::uint64_t amount) noexcept {
  const auto room = static_cast<std::uint64_t>(full() - level_);
  if (amount > room / us_per_minute) {
    level_ = full();
  } else {
    level_ += static_cast<std::int64_t>(amount) * us_per_minute;
  }
}

void token_bucket::lower_to(std::uint64_t units) noexcept {
  if (units >= limit_) return;  // the level never exceeds the limit: nothing to lower
  level_ = std::min(level_, static_cast<std::int64_t>(units) * us_per_minute);
}

void token_bucket::set_limit(std::uint64_t limit) noexcept {
  limit_ = std::clamp<std::uint64_t>(limit, 1, max_limit);
  rate_ = limit_;
  level_ = std::min(level_, full());
}

void token_bucket::set_rate(std::uint64_t per_minute) noexcept {
  rate_ = std::clamp<std::uint64_t>(per_minute, limit_, static_cast<std::uint64_t>(full()));
}

duration token_bucket::time_until(std::uint64_t cost) const noexcept {
  const std::int64_t need = static_cast<std::int64_t>(std::min(cost, limit_)) * us_per_minute;
  if (level_ >= need) return duration::zero();
  // Capped (at ~285 years) so that a deep debt at a slow rate still fits in nanoseconds.
  constexpr std::uint64_t most_us = 9'000'000'000'000'000;
  return std::chrono::microseconds(std::min(most_us, ceil_div(static_cast<std::uint64_t>(need - level_), rate_)));
}

}  // namespace sluice
