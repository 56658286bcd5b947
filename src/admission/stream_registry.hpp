// admission::stream_registry: every active relayed stream with its buffered byte count, so that under
// memory saturation the pressure tick can reset the streams holding the most bytes first.
// Thread-safe: a mutex guards membership; byte counts are atomics the relay updates lock-free.
// The registry must outlive every handle; a handle must be destroyed before its reset callback's state.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include "admission/memory_budget.hpp"
#include "runtime/asio.hpp"

namespace sluice::admission {

class stream_registry;

namespace detail {
// One registered stream. Intrusive so that register/unregister never allocate under the lock.
struct stream_entry {
  stream_entry* prev = nullptr;
  stream_entry* next = nullptr;
  std::uint64_t id = 0;
  std::atomic<std::uint64_t> buffered{0};
  std::atomic<bool> reset_requested{false};
  std::function<void()> on_reset;
};
}  // namespace detail

// What a victim looked like when it was chosen (a snapshot: the stream may be gone by now).
struct victim {
  std::uint64_t id = 0;
  std::uint64_t buffered = 0;
};

// A stream's registration; unregisters on destruction. Movable, not copyable. The relay calls
// set_buffered() as its buffer grows and shrinks, and checks reset_requested() between chunks.
class stream_handle {
 public:
  stream_handle() = default;
  stream_handle(stream_handle&& o) noexcept;
  stream_handle& operator=(stream_handle&& o) noexcept;
  stream_handle(const stream_handle&) = delete;
  stream_handle& operator=(const stream_handle&) = delete;
  ~stream_handle() { reset(); }

  explicit operator bool() const noexcept { return entry_ != nullptr; }
  std::uint64_t id() const noexcept { return entry_ ? entry_->id : 0; }
  void set_buffered(std::uint64_t bytes) noexcept { entry_->buffered.store(bytes, std::memory_order_relaxed); }
  std::uint64_t buffered() const noexcept { return entry_->buffered.load(std::memory_order_relaxed); }
  bool reset_requested() const noexcept { return entry_->reset_requested.load(std::memory_order_acquire); }
  // Unregisters now (waits for a reset callback running on another thread to return).
  void reset() noexcept;

 private:
  friend class stream_registry;
  stream_handle(stream_registry* owner, detail::stream_entry* e) : owner_(owner), entry_(e) {}
  stream_registry* owner_ = nullptr;
  detail::stream_entry* entry_ = nullptr;
};

class stream_registry {
 public:
  stream_registry() = default;
  stream_registry(const stream_registry&) = delete;
  stream_registry& operator=(const stream_registry&) = delete;
  ~stream_registry();

  // Registers a stream. `on_reset` (optional) runs when the stream is picked as a victim: on the
  // pressure tick's thread, under the registry lock, so it must be short, thread-safe and must not
  // touch the registry; typically it posts a cancellation to the stream's own executor. Because it
  // runs under the lock, it never runs after the handle's destructor has returned.
  stream_handle add(std::function<void()> on_reset = {});

  std::size_t size() const;
  // Sum of every stream's buffered bytes (the gauge `sluice_stream_buffered_bytes`).
  std::uint64_t buffered_total() const;

  // The `max` streams holding the most buffered bytes, largest first, skipping streams whose reset
  // was already requested (they are on their way out). Does not change anything.
  std::vector<victim> select_victims(std::size_t max) const;
  // Selects like select_victims and requests their reset (flag + callback) under the same lock, so
  // a chosen stream cannot unregister in between. Returns who was asked.
  std::vector<victim> reset_victims(std::size_t max);

 private:
  friend class stream_handle;
  void remove(detail::stream_entry* e) noexcept;
  std::vector<std::pair<std::uint64_t, detail::stream_entry*>> top_locked(std::size_t max) const;

  mutable std::mutex mu_;
  detail::stream_entry* head_ = nullptr;
  std::size_t size_ = 0;
  std::uint64_t next_id_ = 1;
};

// What one pressure tick saw and did.
struct pressure_report {
  std::size_t rss = 0;
  bool saturated = false;
  bool shedding = false;
  bool ready = true;
  std::vector<victim> reset;
};

// One tick: sample RSS from the budget's source; if saturated, request the reset of up to
// `max_resets` streams with the most buffered bytes. Safe from any thread.
pressure_report pressure_tick(memory_budget& budget, stream_registry& streams, std::size_t max_resets);

// Runs pressure_tick every `interval` on the calling coroutine's executor until cancelled (its
// cancellation slot, e.g. the owning task_group's). `on_tick` (optional) sees each report, e.g. to
// update gauges and log resets. Arguments by reference: all must outlive the loop.
task<void> pressure_loop(memory_budget& budget, stream_registry& streams, std::size_t max_resets, duration interval,
                         std::function<void(const pressure_report&)> on_tick = {});

}  // namespace sluice::admission
