// slot_ledger: where admission::controller counts max-streams and queue-depth. One process alone
// counts its own (local_slots, the default); a worker process of `--processes N` counts in the
// pod's shared table, so the limits hold for the pod (pod_slot_row, pod_slots.hpp). The seam keeps
// the deployment out of the controller, as key_limits keeps it out of the key checks. The
// controller calls it under its own lock.
#pragma once

#include <cstdint>

namespace sluice::admission {

class slot_ledger {
 public:
  virtual ~slot_ledger() = default;
  // A slot when fewer than `max` are held where this ledger counts; `here`: what this process holds.
  virtual bool try_take(std::uint64_t here, std::uint64_t max) noexcept = 0;
  // A slot taken by try_take goes back.
  virtual void give_back() noexcept = 0;
  // The requests waiting where this ledger counts; `here`: this process's.
  virtual std::uint64_t waiting(std::uint64_t here) const noexcept = 0;
  // A place in the wait queue when fewer than `depth` requests wait (after waiting() said there
  // was room: in a pod, another process may have taken it since); and giving it back.
  virtual bool try_queue(std::uint64_t depth) noexcept = 0;
  virtual void unqueue() noexcept = 0;
};

// This process's counts are the only ones: the controller's own.
class local_slots final : public slot_ledger {
 public:
  bool try_take(std::uint64_t here, std::uint64_t max) noexcept override { return here < max; }
  void give_back() noexcept override {}
  std::uint64_t waiting(std::uint64_t here) const noexcept override { return here; }
  bool try_queue(std::uint64_t /*depth*/) noexcept override { return true; }
  void unqueue() noexcept override {}
};

}  // namespace sluice::admission
