// The downstream HTTP/1.1 server of one worker thread: an SO_REUSEPORT acceptor, one session
// coroutine per connection, and the registry of live connections (for the connection cap, the
// write-stall watchdog and shutdown). Every method runs on the owning io_context's thread, except
// where noted. The request_handler decides what each request gets.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>

#include <boost/intrusive/list.hpp>

#include "core/error.hpp"
#include "http/connection.hpp"
#include "http/server_options.hpp"
#include "http/types.hpp"
#include "runtime/task_group.hpp"
#include "runtime/watchdog.hpp"

namespace sluice::http {

class request_handler {
 public:
  virtual ~request_handler() = default;
  // Writes exactly one response to `req` on `conn` (whole or streamed). Returns whether the
  // connection may carry another request. Errors are answered inside; exceptions mean bugs.
  // `req` is the session's until handle() returns (not copied into the handler's coroutine frame,
  // which may last as long as a stream); the handler may move from it or clear it.
  virtual task<bool> handle(request& req, connection& conn) = 0;
  // Answers a request that could not be read (400/408/413/431). Returns keep-alive (always false).
  virtual task<void> reject(const error& e, connection& conn) = 0;
  // The requests whose bodies handle() reads itself, piece by piece (null: every body is read
  // whole first).
  virtual const body_policy* streamed_bodies() const noexcept { return nullptr; }
};

// Counters shared by every worker thread's server.
struct server_shared {
  std::atomic<std::uint64_t> open_connections{0};
  std::atomic<std::uint64_t> refused_connections{0};
  // The connection cap in force (effective_max_connections), set by the first server::start().
  std::atomic<std::uint64_t> max_connections{0};
  // accept() failures for want of descriptors (EMFILE, ENFILE, ...) since the last warning, and when
  // that warning was logged (steady clock, ns): at most one warning a second for all threads.
  std::atomic<std::uint64_t> accept_failures{0};
  std::atomic<std::int64_t> accept_warned_at_ns{0};
  // --processes N (ADR 0016): where the pod's other workers read this process's open connections
  // (its row in the shared segment, kept with open_connections), and whether this process holds
  // more than its share of its generation's connections: while it does, its accept loops leave new
  // connections to the others. Unset (one process): every loop accepts.
  std::atomic<std::uint64_t>* pod_connections = nullptr;
  std::function<bool()> over_share;
  // Times an accept loop stopped accepting because this process held more than its share, and
  // connections it took anyway because they waited in the queue with no other worker taking them.
  std::atomic<std::uint64_t> share_pauses{0};
  std::atomic<std::uint64_t> share_overrides{0};
};

class server {
 public:
  server(net::io_context& ctx, const server_options& opts, request_handler& handler, server_shared& shared);
  ~server();

  // Binds with SO_REUSEPORT so every worker thread can bind the same address. Returns the bound
  // endpoint (resolves port 0).
  result<tcp::endpoint> listen(const tcp::endpoint& ep);
  // Accepts on a listening socket made by someone else (the supervisor of `--processes N`, whose
  // workers all accept on the one socket they inherit): serves a duplicate of `fd`, which stays
  // open for its owner. Returns the socket's address.
  result<tcp::endpoint> adopt(int fd);
  // Spawns the accept loop and the watchdog on the server's io_context. Call it after the
  // descriptor limit was raised: the first server to start fixes the connection cap for all of them
  // from options().max_connections and the soft RLIMIT_NOFILE (logged once).
  void start();
  // Stops accepting new connections; existing ones go on. Thread-safe (posts).
  void stop_accepting();
  // The same, and waits until the acceptor is closed (not from the server's own thread): when it
  // returns, no further connection is accepted here.
  void stop_accepting_now();
  // Closes every connection now. Thread-safe (posts).
  void close_all();
  // Serves a connection another worker process of the pod handed over (`fd`, now this process's)
  // and the bytes already read from it, under the same connection cap as an accepted one.
  // Thread-safe (posts).
  void serve_handed(int fd, std::string already_read);
  runtime::watchdog& watchdog() noexcept { return watchdog_; }
  // Every coroutine this server spawned (accept loop, watchdog, sessions) and is still running.
  const runtime::task_group& tasks() const noexcept { return tasks_; }

 private:
  // One counted place in open_connections, held by a session for its whole life (also when its
  // coroutine is destroyed without ever running).
  class connection_slot {
   public:
    explicit connection_slot(server_shared& s) noexcept : s_(&s) {}
    connection_slot(connection_slot&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
    connection_slot& operator=(connection_slot&&) = delete;
    ~connection_slot() {
      if (s_) give_back(*s_);
    }
    static void give_back(server_shared& s) noexcept {
      s.open_connections.fetch_sub(1, std::memory_order_relaxed);
      if (s.pod_connections) s.pod_connections->fetch_sub(1, std::memory_order_relaxed);
    }

   private:
    server_shared* s_;
  };

  task<void> accept_loop();
  // Waits while this process holds more than its share of the pod's connections (server_shared::
  // over_share); false when the acceptor closed meanwhile.
  task<bool> wait_for_share();
  task<void> session(std::unique_ptr<connection> conn, connection_slot slot);
  // Takes a place under the connection cap; false (counted as refused) when it is reached.
  bool take_slot() noexcept;
  void note_accept_failure(const error_code& ec);

  net::io_context& ctx_;
  const server_options& opts_;
  request_handler& handler_;
  server_shared& shared_;
  tcp::acceptor acceptor_;
  runtime::watchdog watchdog_;
  runtime::task_group tasks_;  // owns the accept loop, the watchdog and every session
  boost::intrusive::list<connection,
                         boost::intrusive::member_hook<connection, decltype(connection::server_hook),
                                                       &connection::server_hook>,
                         boost::intrusive::constant_time_size<false>>
      connections_;
  bool closing_ = false;
};

}  // namespace sluice::http
