// jobs::reap_gate: whether this process may fail other processes' running jobs whose leases
// lapsed (worker_lost). A plain value owned by one loop (redis_worker's upkeep, thread 0).
#pragma once

#include <chrono>
#include <optional>

#include "core/units.hpp"

namespace sluice::jobs {

// A lease that lapsed while this process could not reach Redis either may have lapsed for every
// process at once (Redis down or stalled longer than worker-loss-timeout: no one could renew). Such
// leases say nothing of their workers, so the gate opens only after this process has reached Redis
// at every heartbeat for a whole `settle` (worker-loss-timeout): by then every live process that
// reconnected too has renewed its leases (each renews at once on reconnecting, then every third of
// the timeout), and what is still lapsed belongs to processes that are gone.
class reap_gate {
 public:
  using clock = std::chrono::steady_clock;

  explicit reap_gate(duration settle) noexcept : settle_(settle) {}

  // One heartbeat: whether Redis answered this process's renewal at `now`.
  void heard(bool reached, clock::time_point now) noexcept {
    if (!reached) since_.reset();
    else if (!since_) since_ = now;
  }
  bool open(clock::time_point now) const noexcept { return since_ && now - *since_ >= settle_; }

 private:
  duration settle_;
  std::optional<clock::time_point> since_;  // reaching Redis without a miss since
};

}  // namespace sluice::jobs
