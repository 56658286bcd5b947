// pod_regrant_loop (controller.hpp): a worker process's view of slots freed elsewhere in its pod.
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

#include "admission/controller.hpp"

namespace sluice::admission {

task<void> pod_regrant_loop(controller& c, const pod_slots& slots, duration every) {
  net::steady_timer timer(co_await net::this_coro::executor);
  std::uint64_t seen = slots.releases();
  for (;;) {
    timer.expires_after(every);
    error_code ec;
    co_await timer.async_wait(ec_out(ec));
    if (ec) co_return;
    const std::uint64_t now = slots.releases();
    if (now == seen) continue;
    seen = now;
    c.regrant();
  }
}

}  // namespace sluice::admission
