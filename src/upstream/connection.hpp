// One upstream connection (plain TCP or TLS over TCP) with its read buffer and the response parser
// of the exchange in progress. Internal to upstream/; owned by a response or the pool, one thread.
#pragma once

#include <algorithm>
#include <functional>
#include <optional>
#include <variant>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include "upstream/client.hpp"

namespace sluice::upstream {

class connection {
 public:
  using plain = beast::tcp_stream;
  using secure = beast::ssl_stream<beast::tcp_stream>;

  connection(net::any_io_executor ex, std::size_t max_head);
  connection(net::any_io_executor ex, ssl::context& tls, std::size_t max_head);

  beast::tcp_stream& tcp() noexcept;
  bool is_tls() const noexcept { return std::holds_alternative<secure>(stream_); }
  secure& tls_stream() { return std::get<secure>(stream_); }

  task<error_code> write(request& req);
  // Bytes as they are (a streamed body's head and pieces), under the stream's deadline.
  task<error_code> write_raw(net::const_buffer bytes);
  task<error_code> read_head();
  // One socket read of body bytes into the buffer (nothing is parsed): at most the read window
  // (512 bytes at first: a slow stream's event fits, and the buffer stays small),
  // which doubles (up to max_read_window) each time a read fills it, so a fast body moves in large
  // reads while a slow one keeps a small buffer. Sets `eof` instead of failing on a clean close.
  // `untimed`: the caller watches the read itself (the stream's deadline is off), so a plain
  // connection reads its socket directly, without Beast's timed operation around the read.
  task<error_code> read_more(bool& eof, bool untimed = false);

  // Starts a fresh exchange (a new parser) on this connection.
  void reset_parser(std::size_t max_head);
  // Bytes read from the socket but not yet parsed.
  std::size_t buffered() const noexcept { return buffer_.size(); }
  auto buffered_data() const noexcept { return buffer_.data(); }
  void consume(std::size_t n) noexcept { buffer_.consume(n); }
  // Lets each socket read take up to n bytes (at most max_read_window) from now on.
  void reserve_read(std::size_t n) noexcept { read_window_ = std::clamp(n, read_window_, max_read_window); }
  std::size_t read_window() const noexcept { return read_window_; }
  // Back to a small read buffer (an idle pooled connection keeps no large one).
  void shrink();
  // Gives back a read buffer much larger than the read window needs (the 4 KiB of the head read,
  // once the body reads are small).
  void trim() noexcept { trim_to(read_window_); }
  std::size_t buffer_capacity() const noexcept { return buffer_.capacity(); }

  static constexpr std::size_t initial_read_window = 512;
  // The first read of a response: room for a head and the first events sent with it.
  static constexpr std::size_t head_read_window = 4096;
  static constexpr std::size_t max_read_window = 16 * 1024;
  bhttp::response_parser<bhttp::buffer_body>& parser() { return *parser_; }
  beast::flat_buffer& buffer() noexcept { return buffer_; }
  // True when the peer closed, sent unexpected bytes, or the socket is gone (idle-pool check).
  bool looks_dead() noexcept;
  void close() noexcept;

  std::chrono::steady_clock::time_point idle_since{};
  bool reused = false;
  bool reusable = true;  // false: the exchange broke its framing (an answer before the body ended)
  duration idle_timeout{};  // per body read, from options.idle_between_events

 private:
  // Gives back a buffer more than twice what `window` (or the bytes it holds) needs.
  void trim_to(std::size_t window) noexcept;
  // One socket read of up to `window` bytes into the buffer.
  // `adapt`: the read window doubles when the read fills it (read_more).
  task<error_code> read_into_buffer(std::size_t window, bool& eof, bool adapt = false, bool untimed = false);

  std::variant<plain, secure> stream_;
  beast::flat_buffer buffer_;
  std::size_t read_window_ = initial_read_window;
  std::optional<bhttp::response_parser<bhttp::buffer_body>> parser_;
};

// The idle connections of one client, newest last. Bounded by options.pool_max_idle.
struct pool {
  std::vector<std::unique_ptr<connection>> idle;
  std::size_t max_idle = 0;
  // Keeps `c` (shrunk, stamped idle now); at max_idle the oldest one is closed to make room.
  void put(std::unique_ptr<connection> c);
  // The newest idle connection that is younger than `max_age` and not `dead`; the ones skipped on
  // the way are closed. Null when none is left.
  std::unique_ptr<connection> take(std::chrono::steady_clock::time_point now, duration max_age,
                                   const std::function<bool(connection&)>& dead);
};

}  // namespace sluice::upstream
