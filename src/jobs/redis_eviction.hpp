// jobs::read_eviction_policy: the start-up check of --queue redis that Redis will not evict a
// stored response or a queued job before its time (maxmemory-policy noeviction; docs/queue.md).
// One CONFIG GET on the caller's connection; nothing is kept.
#pragma once

#include <string>

#include "redis/connection.hpp"

namespace sluice::jobs {

struct eviction_policy {
  bool known = false;  // false: CONFIG GET failed (disabled or renamed, or Redis did not answer)
  std::string policy;  // known: maxmemory-policy's value; else why it is not known
  bool safe() const noexcept { return known && policy == "noeviction"; }
};

task<eviction_policy> read_eviction_policy(redis::connection& c, duration timeout);

}  // namespace sluice::jobs
