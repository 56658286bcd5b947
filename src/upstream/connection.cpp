#include "upstream/connection.hpp"

#include <sys/socket.h>

#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

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
  co_await std::visit([&](auto& s) { return bhttp::async_write(s, req, ec_out(ec)); }, stream_);
  co_return ec;
}

task<error_code> connection::read_head() {
  error_code ec;
  co_await std::visit([&](auto& s) { return bhttp::async_read_header(s, buffer_, *parser_, ec_out(ec)); },
                      stream_);
  co_return ec;
}

task<error_code> connection::read_more(bool& eof) {
  eof = false;
  const std::size_t room = buffer_.max_size() - buffer_.size();
  const std::size_t want = std::min(read_window_, room);
  if (want == 0) co_return bhttp::error::buffer_overflow;  // unparsable bytes fill the buffer
  error_code ec;
  auto space = buffer_.prepare(want);
  std::size_t n = co_await std::visit([&](auto& s) { return s.async_read_some(space, ec_out(ec)); }, stream_);
  buffer_.commit(n);
  if (ec == net::error::eof || ec == net::ssl::error::stream_truncated) {
    // stream_truncated: a TLS peer that closed without close_notify; the parser decides whether
    // the body was complete (a close-delimited body) or cut short.
    eof = true;
    co_return error_code{};
  }
  if (!ec && n == want && read_window_ < max_read_window) read_window_ = std::min(read_window_ * 2, max_read_window);
  co_return ec;
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
