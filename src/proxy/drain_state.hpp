// The gateway's shutdown phases, read by every handler and relay (set by app::gateway).
#pragma once

#include <atomic>

namespace sluice::proxy {

struct drain_state {
  std::atomic<bool> draining{false};  // readiness fails; responses say Connection: close
  std::atomic<bool> cutting{false};   // drain timeout passed: end remaining streams in-band
  // A reload started this process's successor (--processes N): responses say Connection: close,
  // so clients move to the new workers; readiness holds (the pod is still ready).
  std::atomic<bool> retiring{false};
};

}  // namespace sluice::proxy
