// pod_slots: max-streams and the wait queue's depth held for the whole pod of `sluice serve
// --processes N` (docs/processes.md): the counts live in the pod's shared segment, one row per
// worker process beside the pod's totals, under one process-shared robust mutex. A worker changes
// only its own row (and the totals); the supervisor gives a dead worker's row back to the pod.
// Lives in shared memory: constructed once by the supervisor before it forks, never destroyed.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "admission/slot_ledger.hpp"
#include "runtime/pod_shape.hpp"
#include "runtime/robust_mutex.hpp"

namespace sluice::admission {

class pod_slots {
 public:
  static constexpr std::size_t rows = runtime::pod_worker_rows;

  pod_slots();
  pod_slots(const pod_slots&) = delete;
  pod_slots& operator=(const pod_slots&) = delete;

  // A slot for row `r` when fewer than `max` are held in the pod.
  bool try_take(std::size_t r, std::uint64_t max) noexcept;
  void give_back(std::size_t r) noexcept;
  // A place in the pod's wait queue for row `r` when fewer than `depth` requests wait.
  bool try_queue(std::size_t r, std::uint64_t depth) noexcept;
  void unqueue(std::size_t r) noexcept;
  // The supervisor, once row r's process has ended: what it held and queued goes back.
  void release_row(std::size_t r) noexcept;

  std::uint64_t held() const noexcept { return held_.load(std::memory_order_relaxed); }
  std::uint64_t queued() const noexcept { return queued_.load(std::memory_order_relaxed); }
  std::uint64_t held_by(std::size_t r) const noexcept { return row_[r].held.load(std::memory_order_relaxed); }
  // Bumped by every give_back: a worker with requests waiting sees another process free a slot.
  std::uint64_t releases() const noexcept { return releases_.load(std::memory_order_relaxed); }
  // Locks that found their last owner dead (a worker killed inside the lock) and repaired the
  // totals from the rows.
  std::uint64_t repairs() const noexcept { return repairs_.load(std::memory_order_relaxed); }

 private:
  class guard;
  struct alignas(64) row {
    std::atomic<std::uint64_t> held{0};
    std::atomic<std::uint64_t> queued{0};
  };
  runtime::robust_mutex mu_;  // first: a test locks it raw to die holding it
  std::atomic<std::uint64_t> held_{0};
  std::atomic<std::uint64_t> queued_{0};
  std::atomic<std::uint64_t> releases_{0};
  std::atomic<std::uint64_t> repairs_{0};
  std::array<row, rows> row_;
};

// A worker process's part of the pod's slots: its row of the shared counts (the controller's
// slot_ledger in a worker of --processes N).
class pod_slot_row final : public slot_ledger {
 public:
  pod_slot_row(pod_slots& slots, std::size_t row) noexcept : slots_(slots), row_(row) {}
  bool try_take(std::uint64_t /*here*/, std::uint64_t max) noexcept override { return slots_.try_take(row_, max); }
  void give_back() noexcept override { slots_.give_back(row_); }
  std::uint64_t waiting(std::uint64_t /*here*/) const noexcept override { return slots_.queued(); }
  bool try_queue(std::uint64_t depth) noexcept override { return slots_.try_queue(row_, depth); }
  void unqueue() noexcept override { slots_.unqueue(row_); }

 private:
  pod_slots& slots_;
  std::size_t row_;
};

}  // namespace sluice::admission
