#include "runtime/watchdog.hpp"

namespace sluice::runtime {

task<void> watchdog::run() {
  net::steady_timer timer(co_await net::this_coro::executor);
  timer_ = &timer;
  while (!stopped_) {
    timer.expires_after(interval_);
    error_code ec;
    co_await timer.async_wait(ec_out(ec));
    if (stopped_) break;
    auto now = steady::now();
    for (auto& i : items_) i.on_tick(now);
  }
  timer_ = nullptr;
}

void watchdog::stop() {
  stopped_ = true;
  if (timer_) timer_->cancel();
}

}  // namespace sluice::runtime
