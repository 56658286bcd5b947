// connection's read side: reading a request under its phase deadlines (head, then the framing
// check, then the body within its cap), the lingering close after a refusal, and the x-request-id
// recovery of a broken head. The write side and the client watch are in connection.cpp.
#include "http/connection.hpp"

#include <sys/socket.h>

#include <algorithm>

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>

#include "http/request_framing.hpp"
#include "runtime/socket_io.hpp"

namespace sluice::http {

using namespace boost::asio::experimental::awaitable_operators;
task<void> connection::expire_after(duration d) {
  net::steady_timer timer(co_await net::this_coro::executor);
  timer.expires_after(d);
  error_code ec;
  co_await timer.async_wait(ec_out(ec));
  if (!ec) socket_.cancel();  // the competing read fails with operation_aborted
}

namespace {

using request_parser = bhttp::request_parser<bhttp::string_body>;

// What one non-blocking read found on a fresh connection.
enum class ready_bytes { some, none, closed };

// The first bytes of a fresh connection's request, if they are already there (usually).
ready_bytes take_ready_bytes(tcp::socket& socket, beast::flat_buffer& buffer, std::size_t want) {
  auto space = buffer.prepare(want);
  const ssize_t n = ::recv(socket.native_handle(), space.data(), space.size(), MSG_DONTWAIT);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return ready_bytes::closed;
  if (n < 0) return ready_bytes::none;
  buffer.commit(static_cast<std::size_t>(n));
  return ready_bytes::some;
}

// A chunked body's string grows under body_reserve (a small buffer, then the cap in one step)
// instead of by doubling, so a body refused at the cap never held more than the cap. Beast checks
// each chunk's size against the body limit before calling this. A Content-Length body is
// reserved to its length (at most the cap: a larger one is refused with its head). The parser
// keeps a reference to it: it lives beside the parser.
struct chunk_reserve {
  request_parser& parser;
  std::size_t body_cap;
  void operator()(std::uint64_t size, std::string_view, error_code&) const {
    auto& body = parser.get().body();
    reserve_body(body, body.size() + static_cast<std::size_t>(size), body_cap);
  }
};

// What the buffer holds, into the parser; need_more is no error.
inline error_code put_buffered(request_parser& parser, beast::flat_buffer& buffer) {
  error_code ec;
  buffer.consume(parser.put(buffer.data(), ec));
  if (ec && ec == bhttp::error::need_more) ec = {};
  return ec;
}

// The request line's length. The parser consumes the request line once it is whole (then its
// parts are in the message); before that, the line is the start of the unparsed buffer.
std::size_t request_line_length(const request_parser& parser, const beast::flat_buffer& buffer) {
  if (!parser.get().target().empty())
    return parser.get().method_string().size() + parser.get().target().size() + 10;  // 2 SP + HTTP/1.1
  const auto raw = buffer.cdata();
  const std::string_view text(static_cast<const char*>(raw.data()), raw.size());
  std::size_t line = text.find('\n');
  if (line == std::string_view::npos) line = text.size();
  else if (line > 0 && text[line - 1] == '\r') --line;
  return line;
}

}  // namespace

task<result<request>> connection::read_request(const body_policy* policy) {
  streamed_.reset();
  streamed_read_ = 0;
  // The first bytes of the request. A fresh connection usually has them already: one
  // non-blocking read takes them. A keep-alive connection usually waits for its next request: the
  // read itself waits in the reactor (no separate readiness wait, which re-arms the descriptor),
  // under idle_timeout kept by the watchdog tick (no timer raced with it per request).
  if (buffer_.size() == 0) {
    const std::size_t want = std::min(served_ ? idle_read_bytes : first_read_bytes, buffer_.max_size());
    const ready_bytes ready = served_ ? ready_bytes::none : take_ready_bytes(socket_, buffer_, want);
    if (ready == ready_bytes::closed) co_return error::make(errc::cancelled, "client closed the connection");
    if (ready == ready_bytes::none) {
      idle_deadline_ = runtime::steady::now() + opts_.idle_timeout;
      error_code ec;
      const std::size_t n = co_await socket_.async_read_some(buffer_.prepare(want), ec_out(ec));
      idle_deadline_ = {};
      if (ec || n == 0) co_return error::make(errc::cancelled, "connection idle or closed");
      buffer_.commit(n);
    }
  }
  served_ = true;

  request_parser parser;
  start_parse(parser, policy);
  chunk_reserve reserve_for_chunk{parser, static_cast<std::size_t>(opts_.max_body_bytes)};
  parser.on_chunk_header(reserve_for_chunk);

  // Fast path: a request's head, and usually its whole body, comes with its first bytes: what the
  // first read brought is parsed at once; only a request still incomplete after it is read under
  // the head and body deadlines (reads raced with timers: coroutines and timer operations each
  // request would otherwise pay for). The parser stops after the head: its framing is checked
  // before any byte of a body is taken.
  parser.eager(false);
  if (const error_code ec = put_buffered(parser, buffer_))
    co_return classify(parser, ec, false, !parser.is_header_done());

  if (!parser.is_header_done()) {
    error_code ec;
    auto r = co_await (bhttp::async_read_header(socket_, buffer_, parser, ec_out(ec)) ||
                       expire_after(opts_.header_timeout));
    if (auto failed = head_read_failure(parser, ec, r.index() == 1)) co_return std::move(*failed);
  }

  if (auto refused = check_framing(parser.get())) {
    note_request_id(parser);
    co_return std::move(*refused);
  }
  if (policy) {
    if (const std::uint64_t cap = policy->streamed_body_cap(parser.get())) co_return stream_body(parser, cap);
    if (auto too_large = check_whole_length(parser)) co_return std::move(*too_large);
  }
  if (auto failed = parse_buffered_body(parser)) co_return std::move(*failed);

  if (!parser.is_done()) {
    if (auto failed = co_await read_rest_of_body(parser)) co_return std::move(*failed);
  }
  // The head buffer can hold a little of a pipelined next request; give back large capacity.
  if (buffer_.size() == 0) buffer_.shrink_to_fit();
  co_return parser.release();
}

// The body, as far as it came with the head.
std::optional<error> connection::parse_buffered_body(request_parser& parser) {
  parser.eager(true);
  if (parser.is_done() || hold_body_bytes(parser.chunked(), buffer_.size())) return std::nullopt;
  if (const error_code ec = put_buffered(parser, buffer_)) return classify(parser, ec, false, false);
  return std::nullopt;
}

// The slow path of a body that did not all come with its head.
task<std::optional<error>> connection::read_rest_of_body(request_parser& parser) {
  if (beast::iequals(parser.get()[bhttp::field::expect], "100-continue")) {
    // Clients that wait for 100 before sending the body.
    static constexpr std::string_view cont = "HTTP/1.1 100 Continue\r\n\r\n";
    error_code ec;
    co_await net::async_write(socket_, net::buffer(cont), ec_out(ec));
    if (ec) co_return error::make(errc::cancelled, "client closed the connection");
  }
  auto r = co_await (read_body(parser) || expire_after(opts_.body_timeout));
  const bool timed_out = r.index() == 1;
  const error_code ec = timed_out ? error_code{} : std::get<0>(r);
  if (timed_out || ec) co_return classify(parser, ec, timed_out, false);
  co_return std::nullopt;
}

void connection::start_parse(request_parser& parser, const body_policy* policy) {
  parser.header_limit(static_cast<std::uint32_t>(opts_.max_header_bytes));
  // Beast checks a Content-Length against the limit as the head completes: with streamed routes,
  // the route decides the limit after the head (stream_body or check_whole_length).
  if (policy) parser.body_limit(boost::none);
  else parser.body_limit(opts_.max_body_bytes);
  failed_request_id_.clear();
  failed_refusal_ = framing_refusal::none;
  failed_upload_ = false;
}

std::optional<error> connection::head_read_failure(const request_parser& parser, const error_code& ec,
                                                   bool timed_out) {
  if (!timed_out && !ec) return std::nullopt;
  // A client that closed before sending anything is not an error worth answering.
  if (!timed_out && ec == bhttp::error::end_of_stream && buffer_.size() == 0)
    return error::make(errc::cancelled, "client closed the connection");
  return classify(parser, ec, timed_out, true);
}

error connection::classify(const request_parser& parser, const error_code& ec, bool timed_out, bool head) {
  note_request_id(parser);
  if (timed_out)
    return error::make(errc::request_timeout,
                       head ? "request head not received in time" : "request body not received in time");
  if (ec == bhttp::error::header_limit) return head_too_large(parser);
  if (ec == bhttp::error::body_limit) return error::make(errc::payload_too_large, "request body too large");
  if (ec == bhttp::error::end_of_stream || ec == net::error::eof || ec == net::error::connection_reset ||
      ec == net::error::operation_aborted)
    return error::make(errc::cancelled, "client closed the connection");
  return error::make(errc::bad_request, "malformed HTTP request: " + ec.message());
}

error connection::head_too_large(const request_parser& parser) {
  // A request line that alone passes its limit is a 414, not a 431.
  if (request_line_length(parser, buffer_) > opts_.max_request_line_bytes) {
    failed_refusal_ = framing_refusal::request_line_too_long;
    return error::make(errc::uri_too_long, "request line too long");
  }
  return error::make(errc::header_too_large, "request head too large");
}

void connection::note_request_id(const request_parser& parser) {
  // The id of a request that is answered with an error, for its log line: from the fields
  // parsed before the error, else from the raw bytes of an unfinished head.
  auto parsed = parser.get().find("x-request-id");
  if (parsed != parser.get().end()) {
    failed_request_id_ = std::string(parsed->value().substr(0, 256));
  } else if (!parser.is_header_done()) {
    const auto raw = buffer_.cdata();
    failed_request_id_ = std::string(
        scan_request_id(std::string_view(static_cast<const char*>(raw.data()), raw.size())).substr(0, 256));
  }
}

std::optional<error> connection::check_framing(request& head) {
  request_head h;
  h.method = head.method_string();
  h.target = head.target();
  h.version = head.version();
  for (const auto& f : head) {
    ++h.field_count;
    switch (f.name()) {
      case bhttp::field::host: h.host.add(f.value()); break;
      case bhttp::field::content_length: h.content_length.add(f.value()); break;
      case bhttp::field::transfer_encoding: h.transfer_encoding.add(f.value()); break;
      default: break;
    }
  }
  const framing_decision d = check_request_framing(h, {opts_.max_request_line_bytes, opts_.max_header_fields});
  if (!d.accepted()) {
    failed_refusal_ = d.refusal;
    errc code = errc::bad_request;
    switch (framing_status(d.refusal)) {
      case 405: code = errc::method_not_allowed; break;
      case 414: code = errc::uri_too_long; break;
      case 431: code = errc::header_too_large; break;
      case 501: code = errc::not_implemented; break;
      default: break;
    }
    return error::make(code, std::string(d.message));
  }
  // An absolute-form target is routed as its path and query (RFC 9112 3.2.2).
  if (d.origin_target.data() != h.target.data() || d.origin_target.size() != h.target.size()) {
    std::string origin;
    origin.reserve(d.origin_target.size() + 1);
    if (d.origin_target.empty() || d.origin_target.front() != '/') origin.push_back('/');
    origin.append(d.origin_target);
    head.target(origin);
  }
  return std::nullopt;
}

// After a refusal that ends the connection (413, 431, a framing error ...): the answer is followed
// by a FIN, and whatever the client still sends is read and dropped for a short, bounded time
// (linger-timeout, linger-bytes), as nginx's lingering close does. Closing a socket with unread
// input sends a reset, which can make the client's TCP stack drop the answer it has not read yet.
task<void> connection::linger_close() {
  if (!socket_.is_open() || opts_.linger_bytes == 0 || opts_.linger_timeout <= duration::zero()) co_return;
  error_code ec;
  socket_.shutdown(tcp::socket::shutdown_send, ec);
  if (ec) co_return;
  co_await (discard_input(opts_.linger_bytes) || expire_after(opts_.linger_timeout));
}

task<error_code> connection::read_body(bhttp::request_parser<bhttp::string_body>& parser) {
  // Beast's read loop, less the puts of a chunked body's last few bytes (hold_body_bytes).
  for (;;) {
    if (!hold_body_bytes(parser.chunked(), buffer_.size())) {
      error_code ec;
      buffer_.consume(parser.put(buffer_.data(), ec));
      if (ec && ec != bhttp::error::need_more) co_return ec;
      if (parser.is_done()) co_return error_code{};
    }
    const std::size_t room = buffer_.max_size() - buffer_.size();
    if (room == 0) co_return bhttp::error::buffer_overflow;
    error_code ec;
    const std::size_t n =
        co_await socket_.async_read_some(buffer_.prepare(std::min<std::size_t>(room, 16 * 1024)), ec_out(ec));
    buffer_.commit(n);
    if (ec == net::error::eof) {
      parser.put_eof(ec);  // a body cut short: partial_message
      co_return ec ? ec : error_code(bhttp::error::partial_message);
    }
    if (ec) co_return ec;
  }
}

task<void> connection::discard_input(std::uint64_t limit) {
  buffer_.consume(buffer_.size());
  const std::size_t piece = std::min<std::size_t>(16 * 1024, buffer_.max_size());
  std::uint64_t dropped = 0;
  while (dropped < limit) {
    error_code ec;
    const std::size_t n = co_await socket_.async_read_some(buffer_.prepare(piece), ec_out(ec));
    if (ec || n == 0) co_return;  // the client closed (what we hoped for), or the deadline cancelled
    dropped += n;  // never committed: the same bytes of buffer are reused
  }
}

std::string_view scan_request_id(std::string_view raw) noexcept {
  static constexpr std::string_view name = "x-request-id:";
  // A line starts at the beginning (the parser has consumed the lines before it: the request line
  // and the fields it parsed) or after a line feed.
  std::size_t start = 0;
  while (start != std::string_view::npos) {
    if (raw.size() - start >= name.size() && beast::iequals(raw.substr(start, name.size()), name)) {
      std::size_t b = start + name.size();
      std::size_t e = raw.find_first_of("\r\n", b);
      if (e == std::string_view::npos) e = raw.size();
      while (b < e && (raw[b] == ' ' || raw[b] == '\t')) ++b;
      while (e > b && (raw[e - 1] == ' ' || raw[e - 1] == '\t')) --e;
      return raw.substr(b, e - b);
    }
    const std::size_t nl = raw.find('\n', start);
    start = nl == std::string_view::npos ? nl : nl + 1;
  }
  return {};
}

}  // namespace sluice::http
