#include "upstream/connection.hpp"

#include <sys/socket.h>

#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_cat.hpp>
#include <boost/beast/core/buffers_suffix.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include "runtime/socket_io.hpp"
#include "upstream/framing.hpp"

namespace sluice::upstream {

connection::connection(net::any_io_executor ex, std::size_t max_head)
    : stream_(std::in_place_type<plain>, ex), buffer_(max_head) {}

connection::connection(net::any_io_executor ex, ssl::context& tls, std::size_t max_head)
    : stream_(std::in_place_type<secure>, ex, tls), buffer_(max_head) {}

beast::tcp_stream& connection::tcp() noexcept {
  if (auto* s = std::get_if<secure>(&stream_)) return s->next_layer();
  return std::get<plain>(stream_);
}

task<error_code> connection::write(request& req) {
  error_code ec;
  if (is_tls()) {
    co_await bhttp::async_write(tls_stream(), req, ec_out(ec));
    co_return ec;
  }
  // Plain TCP: head and body are offered to the socket in one non-blocking sendmsg (a request
  // usually fits its send buffer); only what it does not take goes through the asynchronous
  // write, under the stream's deadline. No posted completion for the usual case.
  const std::string head = runtime::head_bytes(req.base());
  const auto body = net::buffer(req.body());
  int failed = 0;
  const std::size_t sent = runtime::send_now(tcp().socket(), head, body, &failed);
  if (failed) co_return error_code(failed, boost::system::system_category());
  if (sent == head.size() + body.size()) co_return ec;
  const auto all = beast::buffers_cat(net::buffer(head), body);
  beast::buffers_suffix<std::decay_t<decltype(all)>> rest(all);
  rest.consume(sent);
  co_await net::async_write(tcp(), rest, ec_out(ec));
  co_return ec;
}

task<error_code> connection::write_raw(net::const_buffer bytes) {
  error_code ec;
  if (is_tls()) co_await net::async_write(tls_stream(), bytes, ec_out(ec));
  else co_await net::async_write(tcp(), bytes, ec_out(ec));
  co_return ec;
}

task<error_code> connection::read_head() {
  // The head is parsed from sluice's own reads, like the body: the first read may take up to
  // head_read_window, so a head and the events sent right behind it usually come in one system
  // call (and go to the client in one write); the window shrinks back for the body reads.
  auto& p = *parser_;
  while (true) {
    error_code ec = parse_head(p, buffer_);
    if (ec || p.is_header_done()) co_return ec;
    bool eof = false;
    ec = co_await read_into_buffer(std::max(read_window_, head_read_window), eof);
    if (ec && ec == bhttp::error::buffer_overflow) co_return bhttp::error::header_limit;
    if (ec) co_return ec;
    if (eof) co_return buffer_.size() == 0 ? bhttp::error::end_of_stream : bhttp::error::partial_message;
  }
}

task<error_code> connection::read_into_buffer(std::size_t window, bool& eof, bool adapt, bool untimed) {
  eof = false;
  const std::size_t room = buffer_.max_size() - buffer_.size();
  const std::size_t want = std::min(window, room);
  if (want == 0) co_return bhttp::error::buffer_overflow;  // unparsable bytes fill the buffer
  trim_to(want);  // a head read's large buffer is not kept for small body reads
  error_code ec;
  auto space = buffer_.prepare(want);
  std::size_t n = 0;
  if (auto* tcp = std::get_if<plain>(&stream_); tcp && untimed)  // no deadline to arm: the socket's own read
    n = co_await tcp->socket().async_read_some(space, ec_out(ec));
  else
    n = co_await std::visit([&](auto& s) { return s.async_read_some(space, ec_out(ec)); }, stream_);
  buffer_.commit(n);
  if (adapt && !ec && n == window && read_window_ < max_read_window)
    read_window_ = std::min(read_window_ * 2, max_read_window);
  // (Tested for an error first: comparing with an enum builds an error_code of its category, and
  // nearly every read succeeds.)
  if (ec && (ec == net::error::eof || ec == net::ssl::error::stream_truncated)) {
    // stream_truncated: a TLS peer that closed without close_notify; the parser decides whether
    // the body was complete (a close-delimited body) or cut short.
    eof = true;
    co_return error_code{};
  }
  co_return ec;
}

// Not a coroutine: read_into_buffer's task is the one frame of a body read.
task<error_code> connection::read_more(bool& eof, bool untimed) {
  return read_into_buffer(read_window_, eof, /*adapt=*/true, untimed);
}

void connection::trim_to(std::size_t window) noexcept {
  // What is left in the buffer by now is at most a chunk's trailing CRLF or a partial chunk header.
  if (buffer_.capacity() > 2 * std::max(window, buffer_.size())) buffer_.shrink_to_fit();
}

void connection::shrink() {
  read_window_ = initial_read_window;
  if (buffer_.size() == 0) buffer_.shrink_to_fit();
}

void connection::reset_parser(std::size_t max_head) {
  parser_.emplace();
  parser_->header_limit(static_cast<std::uint32_t>(max_head));
  parser_->body_limit(boost::none);  // bodies are bounded by whoever consumes them
}

bool connection::looks_dead() noexcept {
  auto& sock = tcp().socket();
  if (!sock.is_open() || buffer_.size() != 0) return true;
  char probe;
  ssize_t n = ::recv(sock.native_handle(), &probe, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0 || n > 0) return true;  // closed, or bytes nobody asked for (e.g. a TLS close_notify)
  return !(errno == EAGAIN || errno == EWOULDBLOCK);
}

void connection::close() noexcept {
  error_code ec;
  auto& sock = tcp().socket();
  if (sock.is_open()) {
    sock.shutdown(tcp::socket::shutdown_both, ec);
    sock.close(ec);
  }
}

std::unique_ptr<connection> pool::take(std::chrono::steady_clock::time_point now, duration max_age,
                                       const std::function<bool(connection&)>& dead) {
  // Newest first: the likeliest to be alive, and the oldest age out.
  while (!idle.empty()) {
    auto c = std::move(idle.back());
    idle.pop_back();
    if (now - c->idle_since > max_age || dead(*c)) {
      c->close();
      continue;
    }
    return c;
  }
  return nullptr;
}

void pool::put(std::unique_ptr<connection> c) {
  if (idle.size() >= max_idle) {
    // Bounded: the oldest idle connection makes room.
    idle.front()->close();
    idle.erase(idle.begin());
  }
  c->shrink();
  c->idle_since = std::chrono::steady_clock::now();
  idle.push_back(std::move(c));
}

}  // namespace sluice::upstream
