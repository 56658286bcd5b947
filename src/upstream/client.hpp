// upstream::client: HTTP/1.1 (optionally TLS) client for one upstream, with a bounded keep-alive
// pool. One client per worker thread (its connections live and die on that thread); not
// thread-safe. A response keeps its connection until destroyed, then gives it back to the pool when
// the body ended cleanly and the upstream allows keep-alive, or closes it otherwise.
#pragma once

#include <optional>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/ssl/context.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "core/error.hpp"
#include "runtime/asio.hpp"
#include "upstream/body_filter.hpp"
#include "upstream/options.hpp"
#include "upstream/url.hpp"

namespace sluice::upstream {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace ssl = boost::asio::ssl;
using request = bhttp::request<bhttp::string_body>;

class connection;
struct pool;

// A request body sent as it comes (a client's upload, ADR 0027): each piece is read, then written
// to the upstream before the next is read, so one piece is all the exchange holds of it and a slow
// upstream slows the client down.
class body_source {
 public:
  // Up to `cap` bytes into `dst`; 0 at the body's end. An error ends the exchange (the upstream
  // connection is closed): send() returns it as it is.
  virtual task<result<std::size_t>> read_some(char* dst, std::size_t cap) = 0;
  // The body's length when it is known (sent with Content-Length); nullopt: sent chunked.
  virtual std::optional<std::uint64_t> length() const noexcept = 0;

 protected:
  ~body_source() = default;
};

// Lets another coroutine (the client watcher, the drain) abort an exchange in any phase:
// connecting, waiting for the head, or reading the body. Same thread only.
class abort_handle {
 public:
  void abort() noexcept;
  bool aborted() const noexcept { return aborted_; }
  // The last send() began to write its request (the upstream may have acted on it).
  bool sent() const noexcept { return sent_; }

 private:
  friend class client;
  friend class response;
  connection* conn_ = nullptr;
  bool aborted_ = false;
  bool sent_ = false;
};

class response {
 public:
  response(std::unique_ptr<connection> conn, std::weak_ptr<pool> home, abort_handle& abort);
  ~response();
  response(const response&) = delete;
  response& operator=(const response&) = delete;

  unsigned status() const;
  const bhttp::fields& head() const;
  // Gives back the head's fields; status() and the body's framing stay (the parser keeps them
  // apart from the fields). For a stream whose client has its own head: the fields would stay
  // allocated for the stream's whole life, and an upstream sends a dozen or more (rate limits,
  // ids, cookies). head() is empty afterwards.
  void forget_head();
  // Reads up to `cap` body bytes into `dst`; 0 means the body is complete. Each read must make
  // progress within idle_between_events.
  task<result<std::size_t>> read_some(char* dst, std::size_t cap);
  // What read_some() would return without waiting: body bytes decoded from what was already read
  // from the socket (0 when nothing decodable is buffered). Never touches the socket.
  result<std::size_t> read_buffered(char* dst, std::size_t cap);
  // read_some() in steps, for a caller that loops itself (the relay: one coroutine frame fewer per
  // read of a stream). try_read(): read_some's answer when it needs no socket read (bytes, the
  // body's end, or an error), nullopt when it does; read_socket(): that one socket read under the
  // body's deadline (not a coroutine: the connection's read is its one frame); read_failure():
  // what the read's outcome means, nullopt to go on with try_read().
  std::optional<result<std::size_t>> try_read(char* dst, std::size_t cap);
  task<error_code> read_socket(bool& eof);
  std::optional<error> read_failure(const error_code& ec, bool eof) const;
  // Reads the whole remaining body, at most `limit` bytes.
  task<result<std::string>> read_all(std::size_t limit);
  bool done() const;
  // The body's Content-Length, when the upstream sent one (not for a filtered body).
  std::optional<std::uint64_t> content_length() const;
  // Body bytes already read from the socket and not yet decoded: read_some() returns them without
  // waiting.
  bool has_buffered_body() const noexcept;
  // The connection's read buffer (and a filter's pending output): what they hold allocated now, and
  // trim() to give back what the read window no longer needs (a stream's memory is its relay buffer
  // plus this).
  std::size_t buffer_capacity() const noexcept;
  void trim() noexcept;
  // The body comes fast: let each socket read take up to `bytes` (grows the read buffer once).
  void expect_bulk(std::size_t bytes);
  // Closes the connection now (it will not go back to the pool).
  void abort() noexcept;
  // From now on every read returns what `f` makes of the body (body_filter.hpp), not its bytes.
  // Set before the first body read.
  void set_filter(std::unique_ptr<body_filter> f) noexcept { filter_ = std::move(f); }
  // The caller checks idleness itself (a watchdog tick, see proxy::sse_relay) and aborts the
  // response when idle_timeout() passes without a read completing: body reads then run without a
  // per-read timer (each armed and cancelled timer costs a trip through the event loop).
  void watch_idle_externally() noexcept { idle_watched_ = true; }
  duration idle_timeout() const noexcept;
  // Time spent getting a connection ready (pool check, or DNS + TCP + TLS) for this exchange.
  duration connect_time() const noexcept { return connect_time_; }
  void set_connect_time(duration d) noexcept { connect_time_ = d; }

 private:
  // With a filter: decodes into dst, feeds the filter, serves its output (read_buffered's answer).
  result<std::size_t> read_filtered(char* dst, std::size_t cap);

  std::unique_ptr<connection> conn_;
  std::weak_ptr<pool> home_;
  abort_handle& abort_;
  duration connect_time_{};
  bool idle_watched_ = false;
  std::unique_ptr<body_filter> filter_;
  std::string filtered_;         // the filter's output not yet read
  std::size_t filtered_at_ = 0;  // how much of it was read
  bool filter_ended_ = false;    // the filter was told the body ended
};

struct client_stats {
  std::uint64_t connections_opened = 0;
  std::uint64_t connections_reused = 0;
  std::uint64_t stale_retries = 0;
};

class client {
 public:
  // `tls` may be null for an http:// upstream. `authorization` is the full header value
  // ("Bearer ...") or empty; it is sent on every request and never logged.
  client(net::any_io_executor ex, const options& opts, url target, ssl::context* tls);
  ~client();

  // Sends `req` (target, method, body and per-request headers set by the caller; Host is set here)
  // and reads the response head. A reused keep-alive connection found dead before any response
  // byte is retried once on a fresh connection. `deadline_left` caps every phase's timeout (the
  // request's total deadline); a phase cut short by it reports an upstream timeout.
  // With `body`, req's own body is ignored and the request's body is streamed from `body` after the
  // head, always on a fresh connection (a body that cannot be replayed is never risked on one that
  // may have died idle); an upstream that answers before the body ended is heard.
  task<result<std::unique_ptr<response>>> send(request& req, abort_handle& abort,
                                               duration deadline_left = duration::max(), body_source* body = nullptr);

  const url& target() const noexcept { return target_; }
  std::size_t idle_connections() const;
  const client_stats& stats() const noexcept { return stats_; }

 private:
  task<result<std::unique_ptr<connection>>> connect(abort_handle& abort, duration deadline_left);
  // A pooled connection or a fresh one (always fresh for a streamed body).
  task<result<std::unique_ptr<connection>>> ready_connection(abort_handle& abort, duration deadline_left, bool fresh);
  // The head, then the body's pieces; a failure of the body itself goes to `body_failure`.
  task<error_code> send_streamed(connection& c, request& req, body_source& body, std::optional<error>& body_failure);

  net::any_io_executor ex_;
  const options& opts_;
  url target_;
  ssl::context* tls_;
  std::shared_ptr<pool> pool_;
  client_stats stats_;
};

// A TLS client context: system trust store, peer verification on, TLS 1.2+.
std::unique_ptr<ssl::context> make_tls_context();

}  // namespace sluice::upstream
