// connection's streamed request bodies (ADR 0027): a request whose route streams its body (an
// upload of any size) is handed on after its head; the handler then reads the body piece by piece
// into its own buffer, so the connection holds no more of it than one socket read. The whole-body
// reads are in connection_read.cpp.
#include <sys/socket.h>

#include <algorithm>

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>

#include "http/connection.hpp"

namespace sluice::http {

using namespace boost::asio::experimental::awaitable_operators;

namespace {
constexpr std::size_t body_read_bytes = 16 * 1024;  // one socket read of a streamed body

// What the socket holds already, into `buffer` without waiting (false: nothing, or it closed).
bool read_ready(tcp::socket& socket, beast::flat_buffer& buffer, std::size_t room) {
  if (room == 0) return false;
  auto space = buffer.prepare(room);
  const ssize_t n = ::recv(socket.native_handle(), space.data(), space.size(), MSG_DONTWAIT);
  if (n <= 0) return false;
  buffer.commit(static_cast<std::size_t>(n));
  return true;
}
}  // namespace

result<request> connection::stream_body(request_parser& parser, std::uint64_t cap) {
  if (const auto len = parser.content_length(); len && *len > cap) {
    note_request_id(parser);
    failed_upload_ = true;
    return error::make(errc::payload_too_large, "request body larger than " + std::to_string(cap) + " bytes");
  }
  // Beast moves a parser to another body type between its head and its first body byte.
  streamed_ = std::make_unique<streamed_parser>(std::move(parser));
  streamed_->body_limit(cap);  // a chunked body: counted down chunk by chunk
  streamed_->eager(true);      // past chunk headers to their bytes in one put
  continue_asked_ = beast::iequals(streamed_->get()[bhttp::field::expect], "100-continue");
  request head;
  head.base() = streamed_->get().base();
  return head;
}

std::optional<error> connection::check_whole_length(request_parser& parser) {
  if (const auto len = parser.content_length(); len && *len > opts_.max_body_bytes) {
    note_request_id(parser);
    return error::make(errc::payload_too_large, "request body too large");
  }
  parser.body_limit(opts_.max_body_bytes);
  return std::nullopt;
}

std::optional<std::uint64_t> connection::body_length() const noexcept {
  if (!streamed_) return std::uint64_t{0};
  if (const auto len = streamed_->content_length()) return *len;
  return std::nullopt;
}

task<bool> connection::send_continue() {
  // Asked for once, when the handler first wants the body: a request refused before (a key, a
  // limit) never makes its client send the body.
  continue_asked_ = false;
  if (buffer_.size() != 0) co_return true;  // the client did not wait
  static constexpr std::string_view cont = "HTTP/1.1 100 Continue\r\n\r\n";
  error_code ec;
  co_await net::async_write(socket_, net::buffer(cont), ec_out(ec));
  co_return !ec;
}

task<result<std::size_t>> connection::read_body_some(char* dst, std::size_t cap) {
  if (!streamed_) co_return std::size_t{0};
  auto& p = *streamed_;
  if (continue_asked_ && !co_await send_continue()) co_return error::make(errc::cancelled, "client closed the connection");
  // Fills dst with what has arrived, reading on without waiting while more is there: an upload's
  // piece goes upstream in one write however the client's bytes were cut (fewer system calls).
  std::size_t got = 0;
  while (!p.is_done() && got < cap) {
    if (!hold_body_bytes(p.chunked(), buffer_.size())) {
      std::size_t used = 0;
      auto n = put_body(dst + got, cap - got, used);
      if (!n) co_return std::move(n).err();
      got += *n;
      // The put that takes a chunked body's last line ("0\r\n\r\n") may give no byte: the body has
      // ended, with nothing to wait for (a read here waited body-timeout and answered 408).
      if (p.is_done()) break;
      if (used > 0 && buffer_.size() > 0) continue;  // framing taken (a chunk's header): its bytes next
    }
    const std::size_t room = std::min(body_read_bytes, buffer_.max_size() - buffer_.size());
    if (got > 0) {
      if (!read_ready(socket_, buffer_, room)) break;
      continue;
    }
    if (auto failed = co_await read_body_bytes()) co_return std::move(*failed);
  }
  if (!p.is_done()) co_return got;
  if (buffer_.size() == 0) buffer_.shrink_to_fit();
  // The body's bytes ended a watch that saw them as pipelined: it watches the exchange from here.
  if (listener_ && !watch_armed_ && !peer_gone_) arm_watch();
  co_return got;
}

result<std::size_t> connection::put_body(char* dst, std::size_t cap, std::size_t& used) {
  auto& p = *streamed_;
  auto& body = p.get().body();
  body.data = dst;
  body.size = cap;
  body.more = true;
  error_code ec;
  used = p.put(buffer_.data(), ec);
  buffer_.consume(used);
  const std::size_t n = cap - body.size;
  body.data = nullptr;
  if (ec == bhttp::error::body_limit) return error::make(errc::payload_too_large, "request body larger than its route allows");
  if (ec && ec != bhttp::error::need_more && ec != bhttp::error::need_buffer)
    return error::make(errc::bad_request, "malformed request body: " + ec.message());
  streamed_read_ += n;
  return n;
}

task<std::optional<error>> connection::read_body_bytes() {
  const std::size_t room = std::min(body_read_bytes, buffer_.max_size() - buffer_.size());
  if (room == 0) co_return error::make(errc::bad_request, "malformed request body: a chunk line too long");
  error_code ec;
  auto r = co_await (socket_.async_read_some(buffer_.prepare(room), ec_out(ec)) || expire_after(opts_.body_timeout));
  if (r.index() == 1) co_return error::make(errc::request_timeout, "request body: no byte within body-timeout");
  buffer_.commit(std::get<0>(r));
  if (ec) co_return error::make(errc::cancelled, "client closed the connection before its body ended");
  co_return std::nullopt;
}

}  // namespace sluice::http
