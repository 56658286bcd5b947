// stopwatch: elapsed time on the steady clock, for stage timings that feed the histograms. A plain
// value; use one per request or stage on one thread. Steady, because wall-clock jumps (NTP) must
// not show up as negative or huge latencies.
#pragma once

#include <chrono>

namespace sluice::obs {

class stopwatch {
 public:
  using clock = std::chrono::steady_clock;

  stopwatch() noexcept : start_(clock::now()) {}

  clock::time_point started() const noexcept { return start_; }
  clock::duration elapsed() const noexcept { return clock::now() - start_; }
  double elapsed_seconds() const noexcept { return std::chrono::duration<double>(elapsed()).count(); }
  // Elapsed time, then starts again from now: one stopwatch can time consecutive stages.
  clock::duration lap() noexcept {
    const auto now = clock::now();
    const auto d = now - start_;
    start_ = now;
    return d;
  }
  double lap_seconds() noexcept { return std::chrono::duration<double>(lap()).count(); }
  void restart() noexcept { start_ = clock::now(); }

 private:
  clock::time_point start_;
};

}  // namespace sluice::obs
