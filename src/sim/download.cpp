// GCC 12 at -O2 reports a false -Wmismatched-new-delete on Asio's awaitable frames once a
// parallel_group is inlined (as in respond.cpp).
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#include "sim/download.hpp"

#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/write.hpp>

#include <array>
#include <memory>

#include "runtime/socket_io.hpp"

namespace sluice::sim {
namespace {

// Bytes a client may send (a pipelined next request) while a download runs.
constexpr std::size_t max_download_early_bytes = 64 * 1024;

struct download {
  connection& c;
  const body_source& body;
  std::uint64_t size, rate;
  std::string head;
  bool keep_alive;
  net::steady_timer timer;
  response_end end = response_end::peer_gone;
};

// The head, then the body piece by piece; with a rate, each piece waits for its place on the
// schedule (piece k goes out once k pieces' worth of time has passed since the first).
task<void> pump_body(download& d) {
  error_code ec;
  co_await net::async_write(d.c.socket, net::buffer(d.head), ec_out(ec));
  if (ec) co_return;
  std::unique_ptr<char[]> scratch(new char[download_piece_bytes]);
  const auto start = std::chrono::steady_clock::now();
  for (std::uint64_t sent = 0; sent < d.size;) {
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(download_piece_bytes, d.size - sent));
    const std::string_view bytes = d.body.piece(sent, want, scratch.get());
    co_await net::async_write(d.c.socket, net::buffer(bytes.data(), bytes.size()), ec_out(ec));
    if (ec || bytes.empty()) co_return;
    sent += bytes.size();
    d.c.owner.count.download_bytes.fetch_add(bytes.size(), std::memory_order_relaxed);
    if (d.rate == 0 || sent == d.size) continue;
    const double seconds = static_cast<double>(sent) / static_cast<double>(d.rate);
    d.timer.expires_at(start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                   std::chrono::duration<double>(seconds)));
    co_await d.timer.async_wait(ec_out(ec));
    if (ec) co_return;
  }
  d.end = d.keep_alive ? response_end::done : response_end::close;
}

// Reads while the body goes out: EOF or an error means the client left. What it sends early (a
// pipelined request) is kept for the session's next read.
task<void> watch_download_peer(connection& c) {
  std::array<char, 256> scratch;
  for (;;) {
    error_code ec;
    const std::size_t n = co_await c.socket.async_read_some(net::buffer(scratch), ec_out(ec));
    if (n > 0) {
      if (c.buffer.size() + n > max_download_early_bytes) co_return;
      net::buffer_copy(c.buffer.prepare(n), net::buffer(scratch, n));
      c.buffer.commit(n);
    }
    if (ec) co_return;
    auto state = co_await net::this_coro::cancellation_state;
    if (state.cancelled() != net::cancellation_type::none) co_return;
  }
}

}  // namespace

task<response_end> send_streamed(connection& c, http::response<http::empty_body>& head, const body_source& body,
                                 std::uint64_t size, std::uint64_t rate) {
  head.content_length(size);
  download d{c, body, size, rate, runtime::head_bytes(head.base()), head.keep_alive(), net::steady_timer(c.owner.ctx)};
  c.owner.count.count_status(head.result_int());
  // The pump and the watcher borrow `d` from this frame, which outlives them: the group completes
  // only once both have finished.
  auto ex = c.owner.ctx.get_executor();
  auto group = net::experimental::make_parallel_group(net::co_spawn(ex, pump_body(d), net::deferred),
                                                      net::co_spawn(ex, watch_download_peer(c), net::deferred));
  auto [order, pump_error, watch_error] = co_await group.async_wait(net::experimental::wait_for_one(), use_task);
  if (order[0] == 0 && pump_error) std::rethrow_exception(pump_error);  // a bug: reported by the session
  (void)watch_error;
  if (order[0] == 1) d.end = response_end::peer_gone;
  co_return d.end;
}

}  // namespace sluice::sim
