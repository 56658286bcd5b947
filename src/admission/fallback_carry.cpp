#include "admission/fallback_carry.hpp"

#include <algorithm>

namespace sluice::admission {

void fallback_carry::answered(levels left, clock::time_point now) noexcept {
  last_ = left;
  at_ = now;
  alone_ = false;
  admitted_ = {};
}

bool fallback_carry::deciding_alone() noexcept {
  if (alone_) return false;
  alone_ = true;
  admitted_ = {};
  return true;
}

void fallback_carry::admitted_alone(std::uint64_t tokens) noexcept {
  admitted_.requests += 1;
  admitted_.tokens += static_cast<double>(tokens);
}

std::optional<fallback_carry::levels> fallback_carry::fleet_left(clock::time_point now) const noexcept {
  if (!last_) return std::nullopt;
  const double minutes =
      std::chrono::duration<double, std::ratio<60>>(std::max(now - at_, clock::duration::zero())).count();
  const auto refilled = [minutes](double level, std::uint64_t limit) {
    const auto l = static_cast<double>(limit);
    return std::min(l, level + minutes * l);
  };
  return levels{refilled(last_->requests, rpm_), refilled(last_->tokens, tpm_)};
}

fallback_carry::levels fallback_carry::coming_back(clock::time_point now) const noexcept {
  const levels fleet = fleet_left(now).value_or(levels{static_cast<double>(rpm_), static_cast<double>(tpm_)});
  return {std::max(0.0, fleet.requests - admitted_.requests), std::max(0.0, fleet.tokens - admitted_.tokens)};
}

}  // namespace sluice::admission
