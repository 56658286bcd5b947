#include "http/connection.hpp"

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_cat.hpp>
#include <boost/beast/core/buffers_suffix.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/chunk_encode.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

namespace sluice::http {

using namespace boost::asio::experimental::awaitable_operators;

connection::connection(tcp::socket socket, const server_options& opts)
    : socket_(std::move(socket)), cancel_timer_(socket_.get_executor()), buffer_(opts.max_header_bytes + 4096), opts_(opts) {
  error_code ec;
  socket_.set_option(tcp::no_delay(true), ec);
}

connection::~connection() { close(); }

task<void> connection::expire_after(duration d) {
  net::steady_timer timer(co_await net::this_coro::executor);
  timer.expires_after(d);
  error_code ec;
  co_await timer.async_wait(ec_out(ec));
  if (!ec) socket_.cancel();  // the competing read fails with operation_aborted
}

task<result<request>> connection::read_request() {
  // Idle phase: a keep-alive connection waits for the first byte of its next request.
  // Skipped when the request's bytes are already there (a fresh connection usually has them):
  // one peek instead of a wait raced with a timer.
  char probe;
  if (buffer_.size() == 0 && ::recv(socket_.native_handle(), &probe, 1, MSG_PEEK | MSG_DONTWAIT) <= 0) {
    error_code ec;
    auto r = co_await (socket_.async_wait(tcp::socket::wait_read, ec_out(ec)) || expire_after(opts_.idle_timeout));
    if (r.index() == 1 || ec) co_return error::make(errc::cancelled, "connection idle or closed");
  }

  bhttp::request_parser<bhttp::string_body> parser;
  parser.header_limit(static_cast<std::uint32_t>(opts_.max_header_bytes));
  parser.body_limit(opts_.max_body_bytes);

  auto classify = [](const error_code& ec, bool timed_out, bool head) -> error {
    if (timed_out)
      return error::make(errc::request_timeout,
                         head ? "request head not received in time" : "request body not received in time");
    if (ec == bhttp::error::header_limit) return error::make(errc::header_too_large, "request head too large");
    if (ec == bhttp::error::body_limit) return error::make(errc::payload_too_large, "request body too large");
    if (ec == bhttp::error::end_of_stream || ec == net::error::eof || ec == net::error::connection_reset ||
        ec == net::error::operation_aborted)
      return error::make(errc::cancelled, "client closed the connection");
    return error::make(errc::bad_request, "malformed HTTP request: " + ec.message());
  };

  // Fast path: a request's head, and usually its whole body, comes with its first bytes. What one
  // non-blocking read brings is parsed at once; only a request still incomplete after it is read
  // under the head and body deadlines (reads raced with timers: coroutines and timer operations
  // each request would otherwise pay for).
  {
    const std::size_t room = buffer_.max_size() - buffer_.size();
    const std::size_t want = std::min(std::max<std::size_t>(512, buffer_.capacity() - buffer_.size()), room);
    if (want > 0) {
      auto space = buffer_.prepare(want);
      const ssize_t n = ::recv(socket_.native_handle(), space.data(), space.size(), MSG_DONTWAIT);
      if (n > 0) buffer_.commit(static_cast<std::size_t>(n));
    }
    if (buffer_.size() > 0) {
      parser.eager(true);  // the body too, as far as it is there
      error_code ec;
      buffer_.consume(parser.put(buffer_.data(), ec));
      if (ec == bhttp::error::need_more) ec = {};
      if (ec) co_return classify(ec, false, !parser.is_header_done());
    }
  }

  if (!parser.is_header_done()) {
    error_code ec;
    auto r = co_await (bhttp::async_read_header(socket_, buffer_, parser, ec_out(ec)) ||
                       expire_after(opts_.header_timeout));
    bool timed_out = r.index() == 1;
    if (timed_out || ec) {
      // A client that closed before sending anything is not an error worth answering.
      if (!timed_out && ec == bhttp::error::end_of_stream && buffer_.size() == 0)
        co_return error::make(errc::cancelled, "client closed the connection");
      co_return classify(ec, timed_out, true);
    }
  }

  if (beast::iequals(parser.get()[bhttp::field::expect], "100-continue")) {  // clients that wait for 100
    static constexpr std::string_view cont = "HTTP/1.1 100 Continue\r\n\r\n";
    error_code ec;
    co_await net::async_write(socket_, net::buffer(cont), ec_out(ec));
    if (ec) co_return error::make(errc::cancelled, "client closed the connection");
  }

  if (!parser.is_done()) {
    error_code ec;
    auto r = co_await (bhttp::async_read(socket_, buffer_, parser, ec_out(ec)) || expire_after(opts_.body_timeout));
    bool timed_out = r.index() == 1;
    if (timed_out || ec) co_return classify(ec, timed_out, false);
  }
  // The head buffer can hold a little of a pipelined next request; give back large capacity.
  if (buffer_.size() == 0) buffer_.shrink_to_fit();
  co_return parser.release();
}

// Every write goes through here: the watchdog sees when it started, the byte count and the error
// mapping are kept in one place.
result<void> connection::end_write(const error_code& ec, std::size_t n) noexcept {
  write_since_ = {};
  bytes_written_ += n;
  if (ec) return error::make(errc::cancelled, "client connection lost: " + ec.message());
  return ok;
}

task<result<void>> connection::write(response& res) {
  write_since_ = runtime::steady::now();
  error_code ec;
  std::size_t n = co_await bhttp::async_write(socket_, res, ec_out(ec));
  co_return end_write(ec, n);
}

task<result<void>> connection::write_head(bhttp::response<bhttp::empty_body>& head) {
  head.chunked(true);
  // The head as bytes, then written like a streamed piece (offered to the socket first).
  bhttp::response_serializer<bhttp::empty_body> sr(head);
  sr.split(true);
  std::string bytes;
  error_code ec;
  while (!sr.is_header_done() && !ec) {
    sr.next(ec, [&](error_code&, const auto& buffers) {
      const std::size_t n = net::buffer_size(buffers);
      const std::size_t at = bytes.size();
      bytes.resize(at + n);
      net::buffer_copy(net::buffer(bytes.data() + at, n), buffers);
      sr.consume(n);
    });
  }
  if (ec) co_return error::make(errc::internal, "cannot serialize the response head: " + ec.message());
  co_return co_await write_streamed(net::buffer(bytes));
}

namespace {

// One non-blocking sendmsg of as much of `buffers` as the socket takes now (MSG_DONTWAIT, outside
// the reactor). Returns the bytes sent; 0 when the socket is full or failed (the asynchronous
// write that follows then waits, or reports the error).
template <class Buffers>
std::size_t send_now(tcp::socket& socket, const Buffers& buffers) noexcept {
  constexpr std::size_t max_iov = 16;
  ::iovec iov[max_iov];
  std::size_t count = 0;
  for (auto it = net::buffer_sequence_begin(buffers); it != net::buffer_sequence_end(buffers) && count < max_iov; ++it) {
    net::const_buffer b(*it);
    if (b.size() == 0) continue;
    iov[count].iov_base = const_cast<void*>(b.data());
    iov[count].iov_len = b.size();
    ++count;
  }
  ::msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = count;
  const ssize_t n = ::sendmsg(socket.native_handle(), &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
  return n > 0 ? static_cast<std::size_t>(n) : 0;
}

}  // namespace

// Streamed pieces are first offered to the socket directly: when it has room (the usual case for
// a reading client) the piece is written and the relay goes on without a trip through the event
// loop (no posted completion, no extra epoll_wait). Whatever the socket does not take goes through
// the asynchronous write, under the write-stall watchdog as always.
template <class Buffers>
task<result<void>> connection::write_streamed(const Buffers& buffers) {
  const std::size_t total = net::buffer_size(buffers);
  const std::size_t now = send_now(socket_, buffers);
  if (now == total) co_return end_write({}, now);
  beast::buffers_suffix<Buffers> rest(buffers);
  rest.consume(now);
  write_since_ = runtime::steady::now();
  error_code ec;
  std::size_t n = co_await net::async_write(socket_, rest, ec_out(ec));
  co_return end_write(ec, now + n);
}

task<result<void>> connection::write_chunk(std::string_view data) {
  if (data.empty()) co_return ok;  // an empty chunk would end the body
  co_return co_await write_streamed(bhttp::make_chunk(net::buffer(data.data(), data.size())));
}

task<result<void>> connection::write_last_chunk(std::string_view data) {
  if (data.empty()) co_return co_await finish_chunks();
  co_return co_await write_streamed(
      beast::buffers_cat(bhttp::make_chunk(net::buffer(data.data(), data.size())), bhttp::make_chunk_last()));
}

task<result<void>> connection::finish_chunks() {
  co_return co_await write_streamed(bhttp::make_chunk_last());
}

task<connection::peer_event> connection::wait_disconnect() {
  while (socket_.is_open() && !cancelled_) {
    error_code ec;
    co_await socket_.async_wait(tcp::socket::wait_read, ec_out(ec));
    if (ec == net::error::operation_aborted || cancelled_) co_return peer_event::cancelled;
    if (ec) co_return peer_event::gone;
    char probe;
    ssize_t n = ::recv(socket_.native_handle(), &probe, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0) co_return peer_event::gone;   // orderly close
    if (n > 0) co_return peer_event::data;    // pipelined bytes: the next read will see them
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
    co_return peer_event::gone;               // reset or other socket error
  }
  co_return cancelled_ ? peer_event::cancelled : peer_event::gone;
}

task<void> connection::wait_cancelled() {
  while (!cancelled_ && socket_.is_open()) {
    cancel_timer_.expires_at(net::steady_timer::time_point::max());
    error_code ec;
    co_await cancel_timer_.async_wait(ec_out(ec));
  }
}

void connection::cancel() noexcept {
  cancelled_ = true;
  error_code ec;
  socket_.cancel(ec);
  cancel_timer_.cancel();
}

void connection::close() noexcept {
  error_code ec;
  cancel_timer_.cancel();
  // close() alone sends the FIN after whatever is queued (as a shutdown would), one call fewer.
  if (socket_.is_open()) socket_.close(ec);
}

void connection::on_tick(runtime::steady::time_point now) {
  if (write_since_ != runtime::steady::time_point{} && now - write_since_ > opts_.write_stall_timeout) {
    stalled_ = true;
    // An abortive close (RST): the client reads nothing, so whatever is queued in the kernel for it
    // (up to the socket's send buffer, hundreds of KiB) is dropped now instead of lingering
    // behind a FIN that would never be acknowledged.
    error_code ec;
    cancel_timer_.cancel();
    if (socket_.is_open()) {
      socket_.set_option(tcp::socket::linger(true, 0), ec);
      socket_.close(ec);
    }
  }
}

}  // namespace sluice::http
