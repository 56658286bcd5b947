// watchdog: one timer per worker thread that ticks every `interval` and asks each registered item
// whether it has stalled (a client that stopped reading, an upstream that went quiet). One timer for
// thousands of streams instead of one per stream per operation. Single-threaded: items must be
// registered, ticked and destroyed on the thread that runs the watchdog's io_context.
#pragma once

#include <chrono>

#include <boost/intrusive/list.hpp>

#include "runtime/asio.hpp"

namespace sluice::runtime {

using steady = std::chrono::steady_clock;

class watchdog {
 public:
  using hook = boost::intrusive::list_base_hook<boost::intrusive::link_mode<boost::intrusive::auto_unlink>>;

  // Derive from item and register it; it unregisters itself when destroyed.
  class item : public hook {
   public:
    virtual ~item() = default;
    // Called on every tick. Must not destroy items; may close sockets (their operations then fail).
    virtual void on_tick(steady::time_point now) = 0;
  };

  explicit watchdog(std::chrono::milliseconds interval = std::chrono::milliseconds(250)) : interval_(interval) {}
  void add(item& i) { items_.push_back(i); }
  // Runs until stop(); spawn it on the owning thread's executor.
  task<void> run();
  void stop();
  std::chrono::milliseconds interval() const { return interval_; }

 private:
  std::chrono::milliseconds interval_;
  boost::intrusive::list<item, boost::intrusive::constant_time_size<false>> items_;
  net::steady_timer* timer_ = nullptr;
  bool stopped_ = false;
};

}  // namespace sluice::runtime
