#include "proxy/cancel.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>

namespace sluice::proxy {

std::string_view to_string(cancel_reason r) noexcept {
  switch (r) {
    case cancel_reason::none: return "none";
    case cancel_reason::client_gone: return "client_gone";
    case cancel_reason::deadline: return "deadline";
    case cancel_reason::draining: return "draining";
    case cancel_reason::memory: return "memory";
    case cancel_reason::upstream_idle: return "upstream_idle";
  }
  return "none";
}

void request_cancel::cancel(cancel_reason why) noexcept {
  if (why_ != cancel_reason::none || why == cancel_reason::none) return;
  why_ = why;
  upstream_.abort();
  signal_.emit(net::cancellation_type::terminal);
}

error request_cancel::ending() const {
  switch (why_) {
    case cancel_reason::deadline:
      return error::make(errc::upstream_timeout, "the request exceeded request-timeout while streaming");
    case cancel_reason::upstream_idle:
      return error::make(errc::upstream_timeout, "upstream timed out while reading the response body");
    case cancel_reason::draining: return error::make(errc::overloaded, "the gateway is shutting down; retry the request");
    case cancel_reason::memory:
      return error::make(errc::overloaded, "the gateway is over its memory budget; retry the request");
    case cancel_reason::client_gone:
    case cancel_reason::none: break;
  }
  return error::make(errc::cancelled, "the client closed the connection");
}

task<bool> pause(duration d, request_cancel& c) {
  if (c.cancelled()) co_return false;
  net::steady_timer timer(co_await net::this_coro::executor);
  timer.expires_after(d);
  error_code ec;
  co_await timer.async_wait(net::bind_cancellation_slot(c.slot(), ec_out(ec)));
  co_return !c.cancelled();
}

}  // namespace sluice::proxy
