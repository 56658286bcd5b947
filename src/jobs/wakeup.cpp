#include "jobs/wakeup.hpp"

#include <boost/asio/post.hpp>

namespace sluice::jobs {

void wakeup::handle::notify() const noexcept {
  auto s = s_.lock();
  if (!s || s->pending.exchange(true, std::memory_order_acq_rel)) return;  // already on its way
  // The timer is touched only on its own executor.
  net::post(s->timer.get_executor(), [s] { s->timer.cancel(); });
}

wakeup::~wakeup() {
  // A wake posted but not yet run keeps the state (and its timer) alive until it runs on the
  // timer's own thread; nothing else can reach it once this handle is gone.
}

task<bool> wakeup::wait(duration timeout) {
  if (s_->pending.exchange(false, std::memory_order_acq_rel)) co_return true;
  s_->timer.expires_after(timeout);
  co_return co_await wait_timer();
}

task<bool> wakeup::wait() {
  if (s_->pending.exchange(false, std::memory_order_acq_rel)) co_return true;
  s_->timer.expires_at(net::steady_timer::time_point::max());
  co_return co_await wait_timer();
}

task<bool> wakeup::wait_timer() {
  error_code ec;
  co_await s_->timer.async_wait(ec_out(ec));
  co_return s_->pending.exchange(false, std::memory_order_acq_rel);
}

}  // namespace sluice::jobs
