// jobs::redis_outage: a loop riding out Redis not answering (a follower's read, a front's relay of
// a foreground job, a worker's mirror): since when its calls have failed, and whether it has waited
// long enough to give up. A plain value owned by one coroutine.
#pragma once

#include <chrono>
#include <optional>

#include "core/units.hpp"

namespace sluice::jobs {

class redis_outage {
 public:
  using clock = std::chrono::steady_clock;

  explicit redis_outage(duration patience) noexcept : patience_(patience) {}

  // What one failed call at `now` means: the first of an outage (`began`), and whether the outage
  // has lasted the whole patience (`give_up`: the caller ends what it does, never a silent end).
  struct verdict {
    bool began = false;
    bool give_up = false;
  };
  verdict failed(clock::time_point now) noexcept {
    const bool began = !since_;
    if (began) since_ = now;
    return {began, now - *since_ >= patience_};
  }
  // Redis answered: the outage, if any, is over.
  void answered() noexcept { since_.reset(); }

 private:
  duration patience_;
  std::optional<clock::time_point> since_;  // failing since
};

}  // namespace sluice::jobs
