// wakeup: one coroutine's wait that any thread can end. The waiter lives on one executor (its
// worker thread); notify() may come from any thread and posts the wake to that executor. A
// notification that arrives before the wait is kept and ends the next wait at once; a stray one
// may end a wait early, so callers re-check their condition in a loop. Cheap to copy a handle
// (`handle()`) into lists of waiters: a handle outliving its wakeup does nothing.
#pragma once

#include <atomic>
#include <memory>

#include "core/units.hpp"
#include "runtime/asio.hpp"

namespace sluice::jobs {

class wakeup {
  struct state {
    explicit state(net::any_io_executor ex) : timer(std::move(ex)) {}
    std::atomic<bool> pending{false};
    net::steady_timer timer;
  };

 public:
  // A thread-safe reference to a wakeup, for the lists of whoever notifies it.
  class handle {
   public:
    handle() = default;
    void notify() const noexcept;
    bool expired() const noexcept { return s_.expired(); }
    // The same wakeup.
    bool same_as(const handle& o) const noexcept { return !s_.owner_before(o.s_) && !o.s_.owner_before(s_); }

   private:
    friend class wakeup;
    explicit handle(std::weak_ptr<state> s) : s_(std::move(s)) {}
    std::weak_ptr<state> s_;
  };

  explicit wakeup(net::any_io_executor ex) : s_(std::make_shared<state>(std::move(ex))) {}
  ~wakeup();
  wakeup(const wakeup&) = delete;
  wakeup& operator=(const wakeup&) = delete;

  // Until notified or `timeout` passed; true when a notification ended it (and is consumed).
  task<bool> wait(duration timeout);
  // Until notified (or the waiting coroutine is cancelled): no wake-up of its own while idle.
  task<bool> wait();
  void notify() const noexcept { handle(s_).notify(); }
  handle get_handle() const noexcept { return handle(s_); }

 private:
  task<bool> wait_timer();  // the armed timer's wait; true when a notification ended it
  std::shared_ptr<state> s_;
};

}  // namespace sluice::jobs
