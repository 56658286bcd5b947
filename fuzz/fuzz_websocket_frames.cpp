// WebSocket frames from a client, read as the simulator's Realtime session reads them
// (sim/ws_realtime.cpp): a server-side Beast stream over an in-memory stream is sent a valid upgrade
// request and then the input's bytes as frames, reads messages under a 64 KiB read_message_max,
// answers a text message with the Realtime event logic (sim/ws_realtime_events.hpp) and its paced
// response, and echoes a binary one. Every reply must be a JSON object with a string "type" (or the
// echoed text itself), every response must end, and nothing may crash or leak.
//
// The input's first byte picks the mode: with its high bit set, the rest is one message's text handed
// straight to the event logic (the payloads the fuzzer would otherwise have to mask); else its low six
// bits are the in-memory stream's read size (0: all at once), so frames arrive cut anywhere.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/_experimental/test/stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/json/parse.hpp>

#include <exception>
#include <string>
#include <vector>

#include "fuzz_util.hpp"
#include "sim/ws_realtime_events.hpp"

namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
namespace sim = sluice::sim;
using ws_stream = websocket::stream<beast::test::stream&>;

constexpr std::uint64_t fuzz_tokens = 3;

constexpr std::string_view upgrade_request =
    "GET /v1/realtime?model=sim-1 HTTP/1.1\r\nHost: sim\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nOpenAI-Beta: realtime=v1\r\n\r\n";

void check_event(std::string_view event) {
  boost::system::error_code ec;
  const auto v = boost::json::parse(event, ec);
  sluice::fuzz::require(!ec && v.is_object(), "a server event is a JSON object");
  const auto* type = v.get_object().if_contains("type");
  sluice::fuzz::require(type && type->is_string(), "a server event has a string type");
}

// One text message's replies and its response's events, checked; they are what the session writes.
std::vector<std::string> answer(std::string_view text, sim::realtime_state& s) {
  auto out = sim::realtime_replies(text, s);
  for (const auto& reply : out)
    if (reply != text) check_event(reply);
  std::size_t events = 0;
  while (auto e = sim::realtime_next_response_event(s)) {
    check_event(e->text);
    sluice::fuzz::require(++events <= fuzz_tokens + 2, "a response ends after its words and two done events");
    out.push_back(std::move(e->text));
  }
  return out;
}

net::awaitable<void> serve(ws_stream& ws, beast::test::stream& peer, sim::realtime_state& s) {
  boost::system::error_code ec;
  auto token = net::redirect_error(net::use_awaitable, ec);
  co_await ws.async_accept(token);
  if (ec) co_return;
  beast::flat_buffer in;
  for (;;) {
    co_await ws.async_read(in, token);
    if (ec) co_return;
    if (!ws.got_text()) {
      ws.binary(true);
      co_await ws.async_write(in.data(), token);
    } else {
      const auto replies = answer({static_cast<const char*>(in.data().data()), in.size()}, s);
      ws.text(true);
      for (const auto& r : replies) {
        co_await ws.async_write(net::buffer(r), token);
        if (ec) break;
      }
    }
    if (ec) co_return;
    in.clear();
    peer.clear();  // what the client would have read
  }
}

void run_frames(std::string_view frames, std::size_t read_size) {
  net::io_context ioc;
  beast::test::stream server(ioc), peer(ioc);
  server.connect(peer);
  if (read_size > 0) server.read_size(read_size);
  server.append(upgrade_request);
  server.append(frames);
  server.close_remote();  // the client sends nothing more: EOF after its bytes
  ws_stream ws(server);
  ws.read_message_max(64 * 1024);
  ws.auto_fragment(false);
  sim::realtime_state s({"sim-1", fuzz_tokens, sim::realtime_key(1, 0, 1)});
  check_event(sim::realtime_session_created(s));
  net::co_spawn(ioc, serve(ws, peer, s), [](std::exception_ptr e) {
    if (e) std::rethrow_exception(e);  // a bug: libFuzzer records it
  });
  ioc.run();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in = sluice::fuzz::as_text(data, size);
  if (in.empty()) return 0;
  const auto mode = static_cast<unsigned char>(in[0]);
  if (mode & 0x80) {
    sim::realtime_state s({"sim-1", fuzz_tokens, sim::realtime_key(1, 0, 1)});
    (void)answer(in.substr(1), s);
    (void)answer(in.substr(1), s);  // again, on the state the first left
    return 0;
  }
  run_frames(in.substr(1), mode & 0x3f);
  return 0;
}
