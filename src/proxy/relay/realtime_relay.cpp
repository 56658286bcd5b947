#include "proxy/relay/realtime_relay.hpp"

#include <openssl/ssl.h>

#include <array>

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>

namespace sluice::proxy {

namespace {

namespace beast = boost::beast;
namespace websocket = beast::websocket;
namespace ssl = boost::asio::ssl;
using namespace boost::asio::experimental::awaitable_operators;
using plain_upstream = websocket::stream<beast::tcp_stream>;
using tls_upstream = websocket::stream<beast::ssl_stream<beast::tcp_stream>>;
using client_stream = websocket::stream<tcp::socket&>;

constexpr std::size_t piece_bytes = 16 * 1024;  // one direction's buffer

realtime_end refused(error e) {
  realtime_end end;
  end.refused = std::move(e);
  return end;
}

error unreachable(std::string_view phase, const error_code& ec) {
  error e = error::make(errc::upstream_connect, "The Realtime upstream could not be reached (" + std::string(phase) +
                                                    ": " + ec.message() + ").");
  e.retryable = true;
  return e;
}

// Headers of the handshake that the WebSocket handshake itself owns.
bool handshake_owned(const bhttp::fields::value_type& f) {
  using bhttp::field;
  const auto n = f.name();
  return n == field::host || n == field::connection || n == field::upgrade || n == field::content_length ||
         n == field::content_type || n == field::accept || n == field::sec_websocket_key ||
         n == field::sec_websocket_version || n == field::sec_websocket_extensions;
}

void set_limits(auto& ws, const realtime_limits& lim, beast::role_type role) {
  auto t = websocket::stream_base::timeout::suggested(role);
  t.handshake_timeout = lim.connect_timeout;
  t.idle_timeout = lim.idle_timeout;
  t.keep_alive_pings = true;  // a quiet but live peer answers pings; a dead one is idle
  ws.set_option(t);
  ws.read_message_max(lim.max_message);
}

task<error_code> connect_tcp(beast::tcp_stream& s, const config::url& u, duration timeout) {
  error_code ec;
  tcp::resolver resolver(co_await net::this_coro::executor);
  const auto endpoints = co_await resolver.async_resolve(u.host, std::to_string(u.port), ec_out(ec));
  if (ec) co_return ec;
  s.expires_after(timeout);
  co_await s.async_connect(endpoints, ec_out(ec));
  co_return ec;
}

// The upstream's handshake, with the attempt's headers (its key among them). Its refusal keeps the
// upstream's status.
template <class Ws>
task<std::optional<error>> open_upstream(Ws& ws, const realtime_target& t, const realtime_limits& lim) {
  beast::get_lowest_layer(ws).expires_never();  // the WebSocket's own timeouts from here
  set_limits(ws, lim, beast::role_type::client);
  const upstream::request& head = t.head;
  ws.set_option(websocket::stream_base::decorator([&head](websocket::request_type& r) {
    for (const auto& f : head)
      if (!handshake_owned(f)) r.set(f.name_string(), f.value());
  }));
  websocket::response_type res;
  error_code ec;
  co_await ws.async_handshake(res, t.url->host_header(), std::string(head.target()), ec_out(ec));
  if (!ec) co_return std::nullopt;
  if (const unsigned status = res.result_int(); status != 0 && status != 101) {
    error e = error::make(errc::upstream_status, "The upstream refused the Realtime session (HTTP " +
                                                     std::to_string(status) + ").");
    e.upstream_status = static_cast<int>(status);
    co_return e;
  }
  co_return unreachable("WebSocket handshake", ec);
}

enum class side : std::uint8_t { none, client, upstream };

struct pump_end {
  bool closed = false;   // a close frame ended it (else an error)
  bool too_big = false;  // a message past read_message_max (Beast closed that side with 1009)
  bool idle = false;     // Beast's idle timeout: silent, its pings unanswered
  websocket::close_reason reason;
};

// One direction: a piece read, then written, then the next; a message's frames keep its type.
template <class From, class To>
task<pump_end> pump(From& from, To& to, std::uint64_t& moved) {
  std::array<char, piece_bytes> piece;
  bool mid_message = false;
  while (true) {
    error_code ec;
    const std::size_t n = co_await from.async_read_some(net::buffer(piece), ec_out(ec));
    if (ec)
      co_return pump_end{ec == websocket::error::closed, ec == websocket::error::message_too_big,
                         ec == beast::error::timeout, from.reason()};
    if (!mid_message) to.binary(from.got_binary());
    const bool last = from.is_message_done();
    co_await to.async_write_some(last, net::buffer(piece.data(), n), ec_out(ec));
    if (ec) co_return pump_end{};  // the other side's write broke: its own read ends too
    moved += n;
    mid_message = !last;
  }
}

// A direction to its end, then the other side closed with the same reason (or "going away").
template <class From, class To>
task<pump_end> pump_then_close(From& from, To& to, std::uint64_t& moved, side self, side& first) {
  pump_end end = co_await pump(from, to, moved);
  if (first == side::none) first = self;
  error_code ec;
  const websocket::close_reason why = end.closed ? end.reason : websocket::close_reason(websocket::close_code::going_away);
  if (to.is_open()) co_await to.async_close(why, ec_out(ec));
  if (ec || !to.is_open()) beast::get_lowest_layer(to).close();  // whatever the other direction waits on ends
  co_return end;
}

template <class Up>
task<realtime_end> bridge(Up& up, tcp::socket& client, const http::request& req, const bhttp::fields& extra,
                          const realtime_limits& lim) {
  realtime_end end;
  client_stream down(client);
  set_limits(down, lim, beast::role_type::server);
  down.set_option(websocket::stream_base::decorator([&extra](websocket::response_type& r) {
    for (const auto& f : extra) r.set(f.name_string(), f.value());
  }));
  error_code ec;
  co_await down.async_accept(req, ec_out(ec));
  if (ec) {
    end.client_closed = true;
    beast::get_lowest_layer(up).close();
    co_return end;
  }
  side first = side::none;
  auto [to_up, to_down] = co_await (pump_then_close(down, up, end.bytes_to_upstream, side::client, first) &&
                                    pump_then_close(up, down, end.bytes_to_client, side::upstream, first));
  end.client_closed = first == side::client;
  end.upstream_failed = first == side::upstream && !to_down.closed;
  end.too_big = to_up.too_big;
  end.idle = to_up.idle || to_down.idle;
  co_return end;
}

task<realtime_end> relay_tls(tcp::socket& client, const http::request& req, const realtime_target& t,
                             const bhttp::fields& extra, ssl::context& tls, const realtime_limits& lim) {
  tls_upstream up(co_await net::this_coro::executor, tls);
  if (auto ec = co_await connect_tcp(beast::get_lowest_layer(up), *t.url, lim.connect_timeout)) co_return refused(unreachable("connect", ec));
  auto& s = up.next_layer();
  if (!SSL_set_tlsext_host_name(s.native_handle(), t.url->host.c_str()))
    co_return refused(error::make(errc::upstream_connect, "cannot set TLS SNI for " + t.url->host));
  s.set_verify_mode(ssl::verify_peer);
  s.set_verify_callback(ssl::host_name_verification(t.url->host));
  error_code ec;
  co_await s.async_handshake(ssl::stream_base::client, ec_out(ec));
  if (ec) co_return refused(unreachable("TLS handshake", ec));
  if (auto e = co_await open_upstream(up, t, lim)) co_return refused(std::move(*e));
  co_return co_await bridge(up, client, req, extra, lim);
}

}  // namespace

task<realtime_end> relay_realtime(tcp::socket& client, const http::request& req, const realtime_target& t,
                                  const bhttp::fields& extra, ssl::context* tls, const realtime_limits& lim) {
  if (t.url->tls) {
    if (!tls) co_return refused(error::make(errc::upstream_connect, "no TLS client context for the Realtime upstream"));
    co_return co_await relay_tls(client, req, t, extra, *tls, lim);
  }
  plain_upstream up(co_await net::this_coro::executor);
  if (auto ec = co_await connect_tcp(beast::get_lowest_layer(up), *t.url, lim.connect_timeout)) co_return refused(unreachable("connect", ec));
  if (auto e = co_await open_upstream(up, t, lim)) co_return refused(std::move(*e));
  co_return co_await bridge(up, client, req, extra, lim);
}

}  // namespace sluice::proxy
