// Reconnect pacing: full jitter (a uniform pick between the floor and an exponentially growing
// ceiling, capped), so that many connections dropped at once (a Redis restart seen by every worker
// of every replica) do not come back in lockstep. Pure; the generator is the caller's.
#pragma once

#include <algorithm>
#include <random>

#include "core/units.hpp"

namespace sluice::redis {

// Uniform in [lo, min(hi, lo * 2^(attempt + 1))]; `attempt` counts failures before this one (0: the
// first retry, already spread over [lo, 2 lo]).
template <class Rng>
duration backoff_delay(duration lo, duration hi, unsigned attempt, Rng& rng) {
  if (hi <= lo) return lo;
  duration ceiling = lo;
  for (unsigned i = 0; i <= attempt && ceiling < hi; ++i) ceiling *= 2;
  ceiling = std::min(ceiling, hi);
  if (ceiling <= lo) return lo;
  std::uniform_int_distribution<duration::rep> pick(lo.count(), ceiling.count());
  return duration(pick(rng));
}

}  // namespace sluice::redis
