// The downstream HTTP/1.1 server of one worker thread: an SO_REUSEPORT acceptor, one session
// coroutine per connection, and the registry of live connections (for the connection cap, the
// write-stall watchdog and shutdown). Every method runs on the owning io_context's thread, except
// where noted. The request_handler decides what each request gets.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include <boost/intrusive/list.hpp>

#include "core/error.hpp"
#include "http/connection.hpp"
#include "http/server_options.hpp"
#include "http/types.hpp"
#include "runtime/watchdog.hpp"

namespace sluice::http {

class request_handler {
 public:
  virtual ~request_handler() = default;
  // Writes exactly one response to `req` on `conn` (whole or streamed). Returns whether the
  // connection may carry another request. Errors are answered inside; exceptions mean bugs.
  virtual task<bool> handle(request req, connection& conn) = 0;
  // Answers a request that could not be read (400/408/413/431). Returns keep-alive (always false).
  virtual task<void> reject(const error& e, connection& conn) = 0;
};

// Counters shared by every worker thread's server.
struct server_shared {
  std::atomic<std::uint64_t> open_connections{0};
  std::atomic<std::uint64_t> refused_connections{0};
};

class server {
 public:
  server(net::io_context& ctx, const server_options& opts, request_handler& handler, server_shared& shared);
  ~server();

  // Binds with SO_REUSEPORT so every worker thread can bind the same address. Returns the bound
  // endpoint (resolves port 0).
  result<tcp::endpoint> listen(const tcp::endpoint& ep);
  // Spawns the accept loop and the watchdog on the server's io_context.
  void start();
  // Stops accepting new connections; existing ones go on. Thread-safe (posts).
  void stop_accepting();
  // Closes every connection now. Thread-safe (posts).
  void close_all();
  runtime::watchdog& watchdog() noexcept { return watchdog_; }

 private:
  task<void> accept_loop();
  task<void> session(tcp::socket socket);

  net::io_context& ctx_;
  const server_options& opts_;
  request_handler& handler_;
  server_shared& shared_;
  tcp::acceptor acceptor_;
  runtime::watchdog watchdog_;
  boost::intrusive::list<connection,
                         boost::intrusive::member_hook<connection, decltype(connection::server_hook),
                                                       &connection::server_hook>,
                         boost::intrusive::constant_time_size<false>>
      connections_;
  bool closing_ = false;
};

}  // namespace sluice::http
