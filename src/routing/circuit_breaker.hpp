// circuit_breaker: passive health of one upstream, shared by every worker thread. Closed lets
// everything through; enough consecutive failures, or a high failure share over a window of recent
// outcomes, open it; after an open time (doubling while the upstream keeps failing) it is half-open
// and lets exactly one probe request through, whose outcome closes or re-opens it. The clock is a
// parameter, so tests drive it without sleeping. Thread-safe (one small mutex).
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <vector>

#include "core/units.hpp"

namespace sluice::routing {

using steady_clock = std::chrono::steady_clock;
using time_point = steady_clock::time_point;

enum class circuit_state : std::uint8_t { closed = 0, half_open = 1, open = 2 };
std::string_view to_string(circuit_state s) noexcept;

struct circuit_settings {
  std::uint64_t failures = 5;
  double error_rate = 0.5;
  std::uint64_t window = 20;
  std::uint64_t min_volume = 10;
  duration open_time = std::chrono::seconds(10);
  duration open_time_max = std::chrono::minutes(2);
};

class circuit_breaker {
 public:
  explicit circuit_breaker(circuit_settings s);

  // Whether a request could be sent now (closed, or half-open with its probe slot free).
  bool available(time_point now) const;
  // Takes the right to send one request: always when closed; the single probe slot when half-open.
  // `probe` tells the caller it holds the probe slot (report its outcome, or release it).
  bool try_acquire(time_point now, bool& probe);
  void on_success(bool probe);
  void on_failure(time_point now, bool probe);
  // A probe that ended without an outcome (the client left): the slot is free again.
  void release_probe();

  circuit_state state(time_point now) const;
  // When an open circuit turns half-open (meaningful while open).
  time_point retry_at() const;
  std::uint64_t times_opened() const;

 private:
  circuit_state state_locked(time_point now) const;
  void open_locked(time_point now);
  void record_locked(bool failed);

  mutable std::mutex mu_;
  circuit_settings s_;
  bool open_ = false;           // open or half-open (half-open = open and now >= open_until_)
  bool probe_in_flight_ = false;
  time_point open_until_{};
  duration next_open_time_;
  std::uint64_t consecutive_ = 0;
  std::vector<bool> window_;    // ring of recent outcomes (true = failure)
  std::size_t window_pos_ = 0;
  std::size_t window_fill_ = 0;
  std::size_t window_failures_ = 0;
  std::uint64_t opened_ = 0;
};

}  // namespace sluice::routing
