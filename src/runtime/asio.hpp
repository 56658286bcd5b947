// Short names for the Asio/Beast vocabulary used across sluice. Header-only aliases, no state.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace sluice {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using boost::system::error_code;
template <class T = void>
using task = net::awaitable<T>;
inline constexpr auto use_task = net::use_awaitable;

// `co_await op(..., ec_out(ec))`: completion errors as values instead of exceptions.
inline auto ec_out(error_code& ec) { return net::redirect_error(net::use_awaitable, ec); }

}  // namespace sluice
