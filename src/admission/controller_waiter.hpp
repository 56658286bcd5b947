// controller's queue records, shared by its two files: controller.cpp (admitting, waiting,
// granting, releasing) and controller_lanes.cpp (the lanes: one per queue_lane with waiters, in a
// ring served round-robin, indexed by a bucket array). Internal to admission/.
#pragma once

#include <memory>

#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/prefer.hpp>

#include "admission/controller.hpp"

namespace sluice::admission {

// The waiters of one queue_lane, oldest first, while it has any. Its storage is inside one of its
// own waiters (`host`), so opening a lane allocates nothing under the lock; when the host leaves
// before the others, the lane moves into another waiter's storage (move_lane_locked). All of it is
// under the controller's mu_.
struct controller::lane {
  const void* id = nullptr;
  waiter* head = nullptr;  // oldest
  waiter* tail = nullptr;
  std::uint64_t count = 0;
  lane* prev = nullptr;  // the ring of lanes with waiters, in serving order
  lane* next = nullptr;
  lane* chain = nullptr;  // the next lane in the same index bucket
  waiter* host = nullptr;
};

// One queued acquire(). Shared ownership: the queue (queue_ref) while queued, then the posted
// completion. Timer and cancellation hooks hold weak references, so they never keep it alive.
// Everything except the queue links, `st` and the grant fields runs on `ex` (the caller's executor).
struct controller::waiter {
  // The awaiting coroutine's completion handler, type-erased. Not net::any_completion_handler:
  // in Boost 1.81 it installs its own handler in the cancellation slot, where ours must live.
  struct handler_base {
    virtual ~handler_base() = default;
    virtual void complete(acquire_result r) = 0;
  };
  template <class Handler>
  struct handler_impl final : handler_base {
    explicit handler_impl(Handler&& h) : handler(std::move(h)) {}
    void complete(acquire_result r) override { std::move(handler)(std::move(r)); }
    Handler handler;
  };
  using handler_type = std::unique_ptr<handler_base>;

  waiter(controller& c, std::uint64_t b, const void* l, const net::any_io_executor& e, handler_type h)
      : owner(&c),
        lane_id(l),
        bytes(b),
        ex(e),
        work(net::prefer(e, net::execution::outstanding_work.tracked)),
        timer(e),
        handler(std::move(h)) {}

  ~waiter() {
    // Granted, but the completion never ran (its executor was shut down first): the slot and the
    // bytes must still go back, or they would be lost for good.
    if (st == wait_state::granted && !delivered) {
      reservation.reset();
      owner->release(granted_at);
    }
  }

  // Delivers the outcome to the awaiting coroutine; runs on `ex`, exactly once.
  void finish();

  controller* owner;
  const void* lane_id;
  // Links in its lane and the wake list; under owner->mu_ while queued.
  waiter* prev = nullptr;
  waiter* next = nullptr;
  waiter* wake_next = nullptr;
  std::shared_ptr<waiter> queue_ref;
  lane lane_storage;  // its lane's state while this waiter is that lane's host

  std::uint64_t bytes;
  wait_state st = wait_state::waiting;
  memory_budget::reservation reservation;
  clock::time_point enqueued{};
  clock::time_point granted_at{};
  bool delivered = false;

  net::any_io_executor ex;
  net::any_io_executor work;  // keeps the caller's io_context running while we wait
  net::steady_timer timer;
  net::cancellation_slot own_slot;
  net::cancellation_slot withdraw_slot;
  handler_type handler;
};

}  // namespace sluice::admission
