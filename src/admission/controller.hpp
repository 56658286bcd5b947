// admission::controller: the global cap on concurrent upstream requests (max_streams) with a bounded
// wait queue, served round-robin across lanes (client keys) and FIFO within a lane; admission is an
// RAII permit holding one slot plus a memory reservation.
// Thread-safe: acquire() from any worker thread; it completes on the caller's executor. The
// controller must outlive every permit and waiter (drain with set_draining(true) before teardown).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <variant>
#include <vector>

#include <boost/asio/cancellation_signal.hpp>

#include "admission/memory_budget.hpp"
#include "admission/options.hpp"
#include "admission/pod_slots.hpp"
#include "admission/slot_ledger.hpp"
#include "runtime/asio.hpp"

namespace sluice::admission {

// key_queue_full: the request's lane (its client key) already has queue-per-key requests waiting.
enum class refusal { queue_full, queue_timeout, memory, draining, cancelled, key_queue_full };
inline constexpr std::size_t refusal_kinds = 6;
// "queue_full", "queue_timeout", ...: the names of the refusals (log and metric labels).
std::string_view to_string(refusal r) noexcept;

// Why a request was not admitted, and when it is worth retrying (the Retry-After header).
struct refused {
  refusal why = refusal::queue_full;
  std::chrono::seconds retry_after{1};  // always within 1..60
};

// The wait lane a request queues in: waiting requests are served round-robin across lanes and FIFO
// within one, so one client cannot starve the others. `id` is an address the caller owns for as
// long as any request of the lane may wait (the pipeline passes its client key's identity); null is
// the one anonymous lane of every request without a key.
struct queue_lane {
  const void* id = nullptr;
  friend bool operator==(queue_lane, queue_lane) = default;
};

class admission_queue;

// One admitted request: a concurrency slot plus `reserved_bytes()` of the memory budget. Its
// destructor (or reset()) gives both back and hands the slot to the next waiter in turn, however
// the request ends. Movable, not copyable; may be destroyed on any thread.
class permit {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  permit() = default;
  permit(permit&& o) noexcept;
  permit& operator=(permit&& o) noexcept;
  permit(const permit&) = delete;
  permit& operator=(const permit&) = delete;
  ~permit() { reset(); }

  explicit operator bool() const noexcept { return owner_ != nullptr; }
  std::uint64_t reserved_bytes() const noexcept { return bytes_.bytes(); }
  // Gives the slot and the bytes back now.
  void reset() noexcept;

 private:
  friend class admission_queue;
  permit(admission_queue* owner, memory_budget::reservation bytes, time_point granted_at)
      : owner_(owner), bytes_(std::move(bytes)), granted_at_(granted_at) {}
  admission_queue* owner_ = nullptr;
  memory_budget::reservation bytes_;
  time_point granted_at_{};
};

using acquire_result = std::variant<permit, refused>;

// Hooks for metrics (admission_metrics installs them). Called on the requesting coroutine's
// thread; set before the first acquire(). Refusals need no hook: the pipeline counts them where
// the request ends, and refused_total() has them per reason.
struct controller_observers {
  // Every admitted request with the time it spent queued (zero when admitted at once):
  // feeds the histogram sluice_queue_wait_seconds.
  std::function<void(duration waited)> on_admitted;
};

// The admission queue as the pipeline sees it: the seam where a queue shared by several processes
// or replicas replaces the local controller below without the pipeline changing. Thread-safe.
class admission_queue {
 public:
  virtual ~admission_queue() = default;

  // A permit at once when a slot is free and nothing is queued; nullopt otherwise (then acquire()).
  // `lane` is the request's wait lane (its client key), should an implementation need it here.
  virtual std::optional<permit> try_admit_now(std::uint64_t reserve_bytes, queue_lane lane = {}) = 0;
  // A permit, after a bounded wait in `lane` if need be, or a refusal. Emitting on `withdraw` (from
  // the caller's executor) takes a waiting request out of the queue (refused{cancelled}).
  virtual task<acquire_result> acquire(std::uint64_t reserve_bytes, net::cancellation_slot withdraw = {},
                                       queue_lane lane = {}) = 0;
  // While draining, new and queued requests are refused with `draining`.
  virtual void set_draining(bool on) = 0;
  virtual std::uint64_t queued() const noexcept = 0;
  virtual std::uint64_t in_use() const noexcept = 0;
  virtual std::uint64_t max_streams() const noexcept = 0;

 protected:
  friend class permit;
  // A permit of this queue made by an implementation.
  permit make_permit(memory_budget::reservation bytes, permit::time_point granted_at) {
    return permit(this, std::move(bytes), granted_at);
  }
  // A permit ended (its bytes are already back): give its slot to the next waiter.
  virtual void release(permit::time_point granted_at) noexcept = 0;
};

// The local admission queue: this process's slots and its wait queue. Waiters are kept in lanes, one
// per queue_lane with somebody waiting (a lane exists only while it has waiters, so there are at
// most queue_depth of them); lanes with waiters form a ring, and each grant goes to the oldest
// waiter of the lane at the ring's cursor, then the cursor moves on. A lane new to the ring joins at
// its end (served after every lane already waiting). With one lane (no keys) this is plain FIFO.
class controller final : public admission_queue {
 public:
  using clock = std::chrono::steady_clock;
  // The clock behind queue-wait times and the retry_after estimate (a seam for tests); queue
  // timeouts use a real steady_timer on the waiter's executor.
  using now_fn = std::function<clock::time_point()>;

  // `slots`: where max_streams and queue_depth are counted (slot_ledger.hpp); null: this process
  // alone (local_slots). A worker process of `--processes N` passes its pod_slot_row: the limits
  // hold for the pod; waiters here get the slots freed in this process first and those freed in
  // the others at regrant().
  controller(const options& opts, memory_budget& budget, now_fn now = {}, std::unique_ptr<slot_ledger> slots = nullptr);
  controller(const controller&) = delete;
  controller& operator=(const controller&) = delete;
  ~controller();

  // Admits at once when a slot is free, nobody is queued and `reserve_bytes` fit the memory
  // budget; otherwise waits in `lane` (round-robin across lanes, FIFO within one) for up to
  // queue_timeout, or is refused at once when the queue is full, the lane already has
  // queue_per_key waiters (key_queue_full; never for the anonymous lane), RSS is over the shed
  // threshold, the bytes can never fit, or we are draining.
  //
  // Completes on the caller's executor (one thread per io_context, or a strand). Withdrawing:
  //  - cancel the awaiting coroutine (its cancellation slot; e.g. `co_await (acquire(n) ||
  //    client_gone())`): the waiter leaves the queue at once and completes with
  //    refused{cancelled}; it never holds a slot;
  //  - or emit on `withdraw` (a slot of a net::cancellation_signal the caller owns, emitted from the
  //    caller's executor), with the same effect.
  // A grant that races with a timeout or a cancellation wins: the caller then gets a permit, and
  // dropping it passes the slot on, so a slot is never lost.
  task<acquire_result> acquire(std::uint64_t reserve_bytes, net::cancellation_slot withdraw = {},
                               queue_lane lane = {}) override;
  // acquire()'s fast path alone, without a coroutine: a permit when a slot is free, nobody is
  // queued (in any lane) and the bytes fit; nullopt otherwise (then call acquire(), which queues or
  // refuses). Lets a caller skip setting up a wait (and a race with its client) in the common case.
  // `lane` plays no part here: with nobody queued, no lane has waiters. Allocates nothing.
  std::optional<permit> try_admit_now(std::uint64_t reserve_bytes, queue_lane lane = {}) override;

  std::uint64_t in_use() const noexcept override { return in_use_.load(std::memory_order_relaxed); }
  std::uint64_t queued() const noexcept override { return queued_.load(std::memory_order_relaxed); }
  std::uint64_t max_streams() const noexcept override { return max_streams_; }
  std::uint64_t queue_depth() const noexcept { return queue_depth_; }
  // Most waiters one keyed lane may have; 0 = no cap but queue_depth. The anonymous lane has none.
  std::uint64_t queue_per_key() const noexcept { return queue_per_key_; }
  // Lanes with somebody waiting now (the gauge sluice_queue_lanes).
  std::uint64_t lanes() const noexcept { return lanes_.load(std::memory_order_relaxed); }

  // Hands slots freed elsewhere in the pod (another process's permits) to the waiters here; a
  // no-op when nobody waits. Any thread.
  void regrant();

  // While draining, new requests are refused with `draining`, and so is everyone already queued.
  void set_draining(bool on) override;
  bool draining() const noexcept { return draining_.load(std::memory_order_relaxed); }

  void set_observers(controller_observers obs) { observers_ = std::move(obs); }
  std::uint64_t admitted_total() const noexcept { return admitted_.load(std::memory_order_relaxed); }
  std::uint64_t refused_total(refusal why) const noexcept {
    return refused_[static_cast<std::size_t>(why)].load(std::memory_order_relaxed);
  }

  // Seconds until a request at queue position `position` (1 = next) can expect a slot:
  // position x mean permit hold time / max_streams, clamped to 1..60 (docs/admission.md).
  std::chrono::seconds retry_after_for(std::uint64_t position) const noexcept;
  // The mean permit hold time the estimate uses (EWMA, seeded with 10s before any release).
  duration mean_hold_time() const noexcept { return duration(mean_hold_ns_.load(std::memory_order_relaxed)); }

 private:
  struct waiter;
  friend struct waiter;
  struct lane;
  struct initiate_wait;
  // How a wait ended; written under mu_ by whoever takes the waiter out of the queue.
  enum class wait_state : unsigned char { waiting, granted, timed_out, cancelled, drained, full, key_full };

  void release(permit::time_point granted_at) noexcept override;
  void note_hold_time_locked(duration held) noexcept;
  refused make_refusal(refusal why, std::uint64_t position);
  // Admission decision for a request that is not queued yet; called under mu_.
  std::optional<memory_budget::reservation> try_grant_locked(std::uint64_t bytes);
  // One concurrency slot (this process's, or the pod's), and giving it back; called under mu_.
  bool take_slot_locked() noexcept;
  void give_slot_locked() noexcept;
  // Whether a request of lane `id` that cannot be granted now may queue (waiting), or is refused
  // at once (full, key_full); called under mu_.
  wait_state room_locked(const void* id) const noexcept;
  // The grant without waiting (takes the lock); when there is none, `room` says whether the
  // request may queue (room_locked).
  std::optional<permit> grant_now(std::uint64_t reserve_bytes, const void* lane_id, wait_state& room);
  // Hands free slots to waiters, lane after lane from the ring's cursor; returns them as a list to
  // wake.
  waiter* grant_waiters_locked(clock::time_point now);
  // The lane index: the lanes with waiters by id (a chained hash over buckets_).
  std::size_t bucket_of(const void* id) const noexcept;
  lane* find_lane_locked(const void* id) const noexcept;
  // Appends `w` to its lane, opening the lane (in w's own storage, at the ring's end) if need be.
  void link_locked(waiter* w);
  // Takes `w` out of its lane `l`: an emptied lane leaves the ring and the index; a lane kept in
  // w's storage moves into the storage of a waiter still in it.
  void unlink_locked(lane* l, waiter* w);
  void remove_lane_locked(lane* l);
  void move_lane_locked(lane* from, waiter* to);
  // Posts each listed waiter's completion to its executor (outside the lock).
  static void wake(waiter* list);
  void enqueue(std::shared_ptr<waiter> w);
  // A timeout or a cancellation: takes `w` out of the queue unless a grant got there first.
  void withdraw(const std::shared_ptr<waiter>& w, wait_state why);

  const std::uint64_t max_streams_;
  const std::uint64_t queue_depth_;
  const std::uint64_t queue_per_key_;
  const duration queue_timeout_;
  memory_budget& budget_;
  now_fn now_;
  const std::unique_ptr<slot_ledger> slots_;

  // The only global shared state on the request path. mu_ guards the lanes (their waiter lists,
  // their ring and the index) and makes each grant decision atomic with the queue; the atomics let
  // observers read without the lock.
  std::mutex mu_;
  lane* cursor_ = nullptr;      // the lane served next; null when nobody waits
  std::vector<lane*> buckets_;  // the lane index; a power of two in size, allocated once
  std::atomic<std::uint64_t> in_use_{0};
  std::atomic<std::uint64_t> queued_{0};
  std::atomic<std::uint64_t> lanes_{0};
  std::atomic<bool> draining_{false};
  std::atomic<std::int64_t> mean_hold_ns_;
  bool hold_seeded_ = false;  // under mu_: the first release replaces the 10s prior outright

  controller_observers observers_;
  std::atomic<std::uint64_t> admitted_{0};
  std::array<std::atomic<std::uint64_t>, refusal_kinds> refused_{};
};

// A worker process of a pod: calls c.regrant() whenever another process gave a slot back (the pod's
// release count moved), looking every `every`, until cancelled. Both must outlive the loop.
task<void> pod_regrant_loop(controller& c, const pod_slots& slots, duration every);

}  // namespace sluice::admission
