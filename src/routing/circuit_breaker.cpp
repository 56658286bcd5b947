#include "routing/circuit_breaker.hpp"

#include <algorithm>

namespace sluice::routing {

std::string_view to_string(circuit_state s) noexcept {
  switch (s) {
    case circuit_state::closed: return "closed";
    case circuit_state::half_open: return "half_open";
    case circuit_state::open: return "open";
  }
  return "closed";
}

circuit_breaker::circuit_breaker(circuit_settings s)
    : s_(s), next_open_time_(s.open_time), window_(std::max<std::uint64_t>(s.window, 1), false) {}

circuit_state circuit_breaker::state_locked(time_point now) const {
  if (!open_) return circuit_state::closed;
  return now >= open_until_ ? circuit_state::half_open : circuit_state::open;
}

circuit_state circuit_breaker::state(time_point now) const {
  std::lock_guard lk(mu_);
  return state_locked(now);
}

bool circuit_breaker::available(time_point now) const {
  std::lock_guard lk(mu_);
  auto st = state_locked(now);
  return st == circuit_state::closed || (st == circuit_state::half_open && !probe_in_flight_);
}

bool circuit_breaker::try_acquire(time_point now, bool& probe) {
  std::lock_guard lk(mu_);
  probe = false;
  switch (state_locked(now)) {
    case circuit_state::closed: return true;
    case circuit_state::open: return false;
    case circuit_state::half_open:
      if (probe_in_flight_) return false;
      probe_in_flight_ = true;
      probe = true;
      return true;
  }
  return false;
}

void circuit_breaker::record_locked(bool failed) {
  if (window_fill_ == window_.size()) {
    if (window_[window_pos_]) --window_failures_;
  } else {
    ++window_fill_;
  }
  window_[window_pos_] = failed;
  if (failed) ++window_failures_;
  window_pos_ = (window_pos_ + 1) % window_.size();
}

void circuit_breaker::open_locked(time_point now) {
  open_ = true;
  open_until_ = now + next_open_time_;
  next_open_time_ = std::min<duration>(next_open_time_ * 2, s_.open_time_max);
  ++opened_;
}

void circuit_breaker::on_success(bool probe) {
  std::lock_guard lk(mu_);
  if (probe) {
    // The probe came back healthy: close, forget the failures that opened it.
    probe_in_flight_ = false;
    open_ = false;
    next_open_time_ = s_.open_time;
    std::fill(window_.begin(), window_.end(), false);
    window_fill_ = window_pos_ = window_failures_ = 0;
  }
  consecutive_ = 0;
  if (!open_) record_locked(false);
}

void circuit_breaker::on_failure(time_point now, bool probe) {
  std::lock_guard lk(mu_);
  if (probe) {
    probe_in_flight_ = false;
    open_locked(now);  // still failing: open again, for longer
    return;
  }
  if (open_) return;  // a request sent before it opened: already counted as open
  ++consecutive_;
  record_locked(true);
  const bool by_count = consecutive_ >= s_.failures;
  const bool by_rate = s_.error_rate > 0 && window_fill_ >= s_.min_volume &&
                       static_cast<double>(window_failures_) >= s_.error_rate * static_cast<double>(window_fill_);
  if (by_count || by_rate) {
    consecutive_ = 0;
    open_locked(now);
  }
}

void circuit_breaker::release_probe() {
  std::lock_guard lk(mu_);
  probe_in_flight_ = false;
}

time_point circuit_breaker::retry_at() const {
  std::lock_guard lk(mu_);
  return open_until_;
}

std::uint64_t circuit_breaker::times_opened() const {
  std::lock_guard lk(mu_);
  return opened_;
}

}  // namespace sluice::routing
