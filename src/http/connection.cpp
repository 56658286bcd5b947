#include "http/connection.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <type_traits>
#include <utility>

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_suffix.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include "http/chunk_frame.hpp"
#include "http/request_framing.hpp"
#include "runtime/socket_io.hpp"
#include "runtime/unique_fd.hpp"

namespace sluice::http {

using namespace boost::asio::experimental::awaitable_operators;

connection::connection(tcp::socket socket, const server_options& opts)
    : socket_(std::move(socket)), buffer_(opts.max_header_bytes + 4096), opts_(opts) {
  error_code ec;
  socket_.set_option(tcp::no_delay(true), ec);
}

connection::connection(tcp::socket socket, const server_options& opts, std::string_view already_read)
    : connection(std::move(socket), opts) {
  handed_over_ = true;
  const std::size_t n = std::min(already_read.size(), buffer_.max_size());
  buffer_.commit(net::buffer_copy(buffer_.prepare(n), net::buffer(already_read.data(), n)));
}

void connection::let_go() noexcept {
  if (!socket_.is_open()) return;
  // release() takes the descriptor out of the reactor explicitly: a close alone would leave it
  // registered there while the other process's duplicate keeps the socket alive.
  error_code ec;
  runtime::unique_fd fd(socket_.release(ec));
  if (ec || !fd) socket_.close(ec);
}

connection::~connection() {
  if (watch_state_) watch_state_->conn = nullptr;
  close();
}

connection::peer_watch connection::watch_peer(peer_listener& l) {
  listener_ = &l;
  if (!watch_armed_ && !peer_gone_) arm_watch();
  return peer_watch(*this);
}

void connection::arm_watch() {
  if (!socket_.is_open()) return;
  if (!watch_state_) watch_state_ = std::make_shared<watch_state>(watch_state{this});
  watch_armed_ = true;
  socket_.async_wait(tcp::socket::wait_read, [state = watch_state_](const error_code& ec) {
    if (state->conn) state->conn->on_watch(ec);
  });
}

void connection::on_watch(const error_code& ec) {
  watch_armed_ = false;
  if (!listener_ || peer_gone_ || !socket_.is_open()) return;  // no watch in force now
  if (ec == net::error::operation_aborted) {  // a read deadline's socket cancel took this wait along
    arm_watch();
    return;
  }
  if (!ec) {
    char probe;
    const ssize_t n = ::recv(socket_.native_handle(), &probe, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n > 0) return;  // pipelined bytes: the next read takes them (re-arming would spin on them)
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      arm_watch();
      return;
    }
  }
  peer_gone_ = true;  // orderly close, reset or another socket error
  std::exchange(listener_, nullptr)->on_peer_gone();
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
  // Written like a streamed piece (offered to the socket first).
  hold_head(head);
  co_return co_await flush_head();
}

void connection::hold_head(bhttp::response<bhttp::empty_body>& head) {
  head.chunked(true);
  held_head_ = runtime::head_bytes(head.base());
}

task<result<void>> connection::flush_head() {
  if (held_head_.empty()) co_return ok;
  co_return co_await write_streamed(net::const_buffer(nullptr, 0));
}

// Streamed pieces are first offered to the socket directly: when it has room (the usual case for
// a reading client) the piece is written and the relay goes on without a trip through the event
// loop (no posted completion, no extra epoll_wait). Whatever the socket does not take goes through
// the asynchronous write, under the write-stall watchdog as always. A held head goes first, in
// the same system call.
template <class Buffers>
task<result<void>> connection::write_streamed(Buffers buffers, std::size_t tried) {
  // A chunk's size line waits with the held head (if any) and goes in the same system call.
  if constexpr (std::is_same_v<Buffers, chunk_piece>) {
    if (tried == not_tried) append_chunk_size_line(held_head_, buffers.data_size());
  }
  const std::size_t head = held_head_.size();
  std::size_t now = tried;
  if (tried == not_tried && sent_whole_now(buffers, now)) co_return ok;
  write_since_ = runtime::steady::now();
  std::size_t done = now;
  if (now < head) {  // rare: the socket did not take even the head
    std::size_t n = 0;
    const bool sent = co_await write_rest_of_head(now, n);
    done += n;
    if (!sent) {
      release_head();
      co_return end_write(net::error::broken_pipe, done);
    }
  }
  if (head) release_head();
  beast::buffers_suffix<Buffers> rest(buffers);
  rest.consume(done - head);
  error_code ec;
  std::size_t n = co_await net::async_write(socket_, rest, ec_out(ec));
  co_return end_write(ec, done + n);
}

template <class Buffers>
bool connection::sent_whole_now(const Buffers& buffers, std::size_t& sent) {
  const std::size_t head = held_head_.size();
  sent = runtime::send_now(socket_, held_head_, buffers);
  if (sent != head + net::buffer_size(buffers)) return false;
  if (head) release_head();
  (void)end_write({}, sent);
  return true;
}

task<bool> connection::write_rest_of_head(std::size_t from, std::size_t& n) {
  error_code ec;
  n = co_await net::async_write(socket_, net::buffer(held_head_.data() + from, held_head_.size() - from), ec_out(ec));
  co_return !ec;
}

// The three below are not coroutines: each returns write_streamed's task, which holds its buffers
// (the bytes they point to are the caller's, alive until the task has been awaited).
task<result<void>> connection::nothing_to_write() { co_return ok; }

task<result<void>> connection::write_chunk(std::string_view data) {
  if (data.empty()) return nothing_to_write();  // an empty chunk would end the body
  std::size_t tried = not_tried;
  if (tried_data_ != nullptr) {  // the rest of the chunk try_write_chunk() began
    // Other bytes than the ones begun would corrupt the body's framing on the wire: a caller's
    // defect, and the connection ends (the write fails) rather than send them.
    if (tried_data_ != data.data()) close();
    tried = std::exchange(tried_sent_, 0);
    tried_data_ = nullptr;
  }
  return write_streamed(chunk_piece(data, chunk_piece::ending::more), tried);
}

bool connection::try_write_chunk(std::string_view data) {
  // The plain case only: a held head, an empty chunk or a piece already begun take write_chunk().
  if (data.empty() || !held_head_.empty() || tried_data_ != nullptr) return false;
  const chunk_piece piece(data, chunk_piece::ending::more);
  append_chunk_size_line(held_head_, data.size());
  std::size_t now = 0;
  if (sent_whole_now(piece, now)) return true;
  tried_data_ = data.data();
  tried_sent_ = now;
  return false;
}

task<result<void>> connection::write_last_chunk(std::string_view data) {
  if (data.empty()) return finish_chunks();
  return write_streamed(chunk_piece(data, chunk_piece::ending::last));
}

task<result<void>> connection::finish_chunks() {
  return write_streamed(net::const_buffer(last_chunk.data(), last_chunk.size()));
}

task<result<void>> connection::write_sized_head(bhttp::response<bhttp::empty_body>& head) {
  held_head_ = runtime::head_bytes(head.base());
  co_return co_await flush_head();
}

task<result<void>> connection::write_piece(std::string_view data) {
  if (data.empty()) return nothing_to_write();
  return write_streamed(net::buffer(data.data(), data.size()));
}

void connection::close() noexcept {
  error_code ec;
  // close() alone sends the FIN after whatever is queued (as a shutdown would), one call fewer.
  if (socket_.is_open()) socket_.close(ec);
}

void connection::on_tick(runtime::steady::time_point now) {
  if (idle_deadline_ != runtime::steady::time_point{} && now >= idle_deadline_) {
    idle_deadline_ = {};
    error_code ec;
    socket_.cancel(ec);  // the idle read fails with operation_aborted: the session ends quietly
  }
  if (write_since_ != runtime::steady::time_point{} && now - write_since_ > opts_.write_stall_timeout) {
    stalled_ = true;
    // An abortive close (RST): the client reads nothing, so whatever is queued in the kernel for it
    // (up to the socket's send buffer, hundreds of KiB) is dropped now instead of lingering
    // behind a FIN that would never be acknowledged.
    error_code ec;
    if (socket_.is_open()) {
      socket_.set_option(tcp::socket::linger(true, 0), ec);
      socket_.close(ec);
    }
  }
}


}  // namespace sluice::http
