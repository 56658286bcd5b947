#include "sim/ws_realtime.hpp"

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket.hpp>

#include <algorithm>
#include <chrono>

#include "sim/files_api.hpp"
#include "sim/ws_realtime_events.hpp"

namespace sluice::sim {
namespace {

namespace websocket = boost::beast::websocket;
using realtime_clock = std::chrono::steady_clock;

// A message this large is read into a buffer that is then given back, not kept for the next one.
constexpr std::size_t realtime_kept_buffer = 64 * 1024;
// How long a paced wait goes before it looks whether the server is stopping.
constexpr auto realtime_stop_check = std::chrono::milliseconds(100);

// One Realtime session: the WebSocket over the connection's socket (so stop() still reaches it),
// the event state, and the timer that paces a response's words.
struct realtime_session {
  connection& c;
  websocket::stream<tcp::socket&> ws;
  realtime_state state;
  net::steady_timer timer;
};

// realtime_open while a session runs.
struct realtime_open_hold {
  explicit realtime_open_hold(counters& n) : count(n) { counters::inc(count.realtime_open); }
  ~realtime_open_hold() { counters::dec(count.realtime_open); }
  realtime_open_hold(const realtime_open_hold&) = delete;
  realtime_open_hold& operator=(const realtime_open_hold&) = delete;
  counters& count;
};

// Whether a Sec-WebSocket-Protocol offer names `realtime` (browsers pass the API's options as
// subprotocols): it is then selected, since a client that offers subprotocols wants one back.
bool offers_realtime_protocol(const http::request<http::string_body>& req) {
  const auto it = req.find(http::field::sec_websocket_protocol);
  if (it == req.end()) return false;
  std::string_view rest = it->value();
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    std::string_view token = rest.substr(0, comma);
    while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
    while (!token.empty() && token.back() == ' ') token.remove_suffix(1);
    if (token == "realtime") return true;
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
  }
  return false;
}

void configure_realtime(realtime_session& r, const http::request<http::string_body>& req) {
  r.ws.set_option(websocket::stream_base::timeout::suggested(boost::beast::role_type::server));
  r.ws.read_message_max(r.c.owner.opts.realtime_max_message);
  r.ws.auto_fragment(false);  // a message goes out as one frame, as it came
  if (offers_realtime_protocol(req))
    r.ws.set_option(websocket::stream_base::decorator(
        [](websocket::response_type& res) { res.set(http::field::sec_websocket_protocol, "realtime"); }));
}

task<bool> send_realtime(realtime_session& r, const std::string& text) {
  r.ws.text(true);
  error_code ec;
  co_await r.ws.async_write(net::buffer(text), ec_out(ec));
  if (!ec) counters::inc(r.c.owner.count.realtime_messages_out);
  co_return !ec;
}

// Waits until `due` (a wait whose time has passed goes on at once); false when the server stops.
// Closing the socket (stop) does not end a timer, so a long wait goes in slices that look at
// `stopping` between them.
task<bool> realtime_wait(realtime_session& r, realtime_clock::time_point due) {
  while (!r.c.owner.stopping) {
    const auto now = realtime_clock::now();
    if (due <= now) {
      r.c.owner.count.note_timer_wakeup(now - due);
      co_return true;
    }
    r.timer.expires_at(std::min(due, now + realtime_stop_check));
    error_code ec;
    co_await r.timer.async_wait(ec_out(ec));
    if (ec) co_return false;
  }
  co_return false;
}

// The response a response.create started, after its response.created: word i goes out ttft + i
// token-delays after that (a fixed schedule), then the done events. A client that leaves meanwhile
// is noticed at the next write; one that sends meanwhile is read after the response.
task<bool> stream_realtime_response(realtime_session& r) {
  const options& o = r.c.owner.opts;
  const bool paced = o.ttft > duration::zero() || o.token_delay > duration::zero();
  const auto first = realtime_clock::now() + o.ttft;
  std::uint64_t words = 0;
  while (auto e = realtime_next_response_event(r.state)) {
    if (e->word && paced) {
      const bool on_time = co_await realtime_wait(r, first + static_cast<std::int64_t>(words) * o.token_delay);
      if (!on_time) co_return false;
    }
    if (e->word) ++words;
    const bool sent = co_await send_realtime(r, e->text);
    if (!sent) co_return false;
  }
  co_return true;
}

// One message read whole into `in`: a binary one is echoed as it came, a text one answered by the
// event logic. False when the session is over.
task<bool> answer_realtime(realtime_session& r, boost::beast::flat_buffer& in) {
  counters& count = r.c.owner.count;
  counters::inc(count.realtime_messages_in);
  error_code ec;
  if (!r.ws.got_text()) {
    r.ws.binary(true);
    co_await r.ws.async_write(in.data(), ec_out(ec));
    if (!ec) counters::inc(count.realtime_messages_out);
    co_return !ec;
  }
  const std::uint64_t audio_before = r.state.audio_bytes;
  const auto replies =
      realtime_replies(std::string_view(static_cast<const char*>(in.data().data()), in.size()), r.state);
  count.realtime_audio_bytes.fetch_add(r.state.audio_bytes - audio_before, std::memory_order_relaxed);
  in.clear();
  for (const auto& reply : replies) {
    const bool sent = co_await send_realtime(r, reply);
    if (!sent) co_return false;
  }
  const bool streamed = co_await stream_realtime_response(r);
  co_return streamed;
}

task<void> run_realtime(realtime_session& r) {
  boost::beast::flat_buffer in;
  for (;;) {
    error_code ec;
    co_await r.ws.async_read(in, ec_out(ec));
    // Beast has answered a close frame (closed) or sent one itself (1009 for a message over
    // realtime-max-message, 1007 for text that is not UTF-8) before the read completes.
    if (ec == websocket::error::closed) counters::inc(r.c.owner.count.realtime_closed_by_client);
    if (ec) co_return;
    const bool more = co_await answer_realtime(r, in);
    if (!more) co_return;
    in.clear();
    if (in.capacity() > realtime_kept_buffer) in.shrink_to_fit();
  }
}

}  // namespace

bool is_realtime_path(std::string_view path) noexcept { return path == "/v1/realtime"; }

task<response_end> serve_realtime(connection& c, const http::request<http::string_body>& req) {
  const bool keep = req.keep_alive();
  std::optional<http::response<http::string_body>> refused;
  if (req.method() != http::verb::get)
    refused = make_error(405, keep, "Method " + std::string(req.method_string()) + " not allowed for /v1/realtime",
                         "invalid_request_error");
  else if (!websocket::is_upgrade(req))
    refused = make_error(400, keep, "GET /v1/realtime is a WebSocket: send Connection: Upgrade and Upgrade: websocket",
                         "invalid_request_error");
  else if (c.buffer.size() != 0)  // a client sends nothing before the 101: these bytes follow no handshake
    refused = make_error(400, false, "Bytes sent before the WebSocket handshake completed", "invalid_request_error");
  if (refused) co_return co_await write_simple(c, *refused);

  worker& w = c.owner;
  const auto model = decoded_query_param(req.target(), "model");
  // The key numbers the worker's sessions: a fresh single-threaded sim gives the same ids each run.
  const std::uint64_t key = realtime_key(w.opts.seed, w.index, w.count.realtime_sessions.load() + 1);
  realtime_session r{c, websocket::stream<tcp::socket&>(c.socket),
                     realtime_state({model && !model->empty() ? *model : w.opts.models.front(), w.opts.tokens, key}),
                     net::steady_timer(w.ctx)};
  configure_realtime(r, req);
  error_code ec;
  co_await r.ws.async_accept(req, ec_out(ec));  // a bad handshake is answered by Beast (400 or 426)
  if (ec) co_return response_end::close;
  counters::inc(w.count.realtime_sessions);
  const realtime_open_hold open(w.count);
  const bool sent = co_await send_realtime(r, realtime_session_created(r.state));
  if (sent) co_await run_realtime(r);
  co_return response_end::close;
}

}  // namespace sluice::sim
