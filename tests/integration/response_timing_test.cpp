// When the bytes of a streamed response leave the gateway, against a scripted upstream on
// 127.0.0.1 whose writes and pauses are fixed by the test: a head that came alone or with part of
// an event goes to the client at once (never held until the event completes), events that came
// with the head go out with it at once, a held head meeting a full socket is still written whole
// and in order; and a keep-alive client connection idle past idle-timeout is closed by the
// watchdog while a client that sends its next request in time is served.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include <boost/asio/detached.hpp>

#include "app/gateway.hpp"
#include "http/connection.hpp"
#include "runtime/socket_io.hpp"
#include "sim/server.hpp"
#include "boxes.hpp"
#include "test_client.hpp"

using namespace sluice;
using namespace std::chrono_literals;

namespace {

using clock_type = std::chrono::steady_clock;

#if defined(__SANITIZE_ADDRESS__)
constexpr auto kPromptly = 600ms;  // sanitizers slow everything down several times
#else
constexpr auto kPromptly = 250ms;
#endif
// How long the scripted upstream pauses inside a response: well above kPromptly, so that bytes
// seen before it ends were not waiting for what follows the pause.
constexpr auto kPause = 1500ms;

std::chrono::milliseconds since(clock_type::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - t);
}

// One HTTP chunk holding `data`.
std::string chunk(const std::string& data) {
  char size[32];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  return size + data + "\r\n";
}

std::string content_event(const std::string& text) {
  return R"(data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":")" +
         text + R"("},"finish_reason":null}]})" + "\n\n";
}

const std::string kTimingHead =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n";

// A one-connection-at-a-time upstream: reads a request (head and Content-Length body), then
// performs `script` on the socket: each step writes its bytes after sleeping its delay.
class scripted_upstream {
 public:
  struct step {
    std::chrono::milliseconds delay;
    std::string bytes;
  };

  explicit scripted_upstream(std::vector<step> script)
      : script_(std::move(script)), acceptor_(io_, test::tcp::endpoint(test::net::ip::make_address("127.0.0.1"), 0)) {
    port_ = acceptor_.local_endpoint().port();
    thread_ = std::thread([this] { serve(); });
  }
  ~scripted_upstream() {
    stop_ = true;
    boost::system::error_code ec;
    // Wake the blocking accept with a connection of our own.
    test::tcp::socket poke(io_);
    poke.connect(acceptor_.local_endpoint(), ec);
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  void serve() {
    while (!stop_) {
      boost::system::error_code ec;
      test::tcp::socket s(io_);
      acceptor_.accept(s, ec);
      if (ec || stop_) return;
      if (!read_request(s)) continue;
      for (const auto& st : script_) {
        std::this_thread::sleep_for(st.delay);
        test::net::write(s, test::net::buffer(st.bytes), ec);
        if (ec) break;
      }
      // Keep the connection until the gateway closes it or pools it; the next accept then waits.
      char buf[256];
      s.read_some(test::net::buffer(buf), ec);
    }
  }
  static bool read_request(test::tcp::socket& s) {
    std::string got;
    char buf[4096];
    boost::system::error_code ec;
    while (true) {
      const auto end = got.find("\r\n\r\n");
      if (end != std::string::npos) {
        const auto cl = got.find("Content-Length: ");
        const std::size_t body = cl == std::string::npos ? 0 : std::stoul(got.substr(cl + 16));
        if (got.size() >= end + 4 + body) return true;
      }
      const std::size_t n = s.read_some(test::net::buffer(buf), ec);
      if (ec) return false;
      got.append(buf, n);
    }
  }

  std::vector<step> script_;
  test::net::io_context io_;
  test::tcp::acceptor acceptor_;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

using test::gateway_box;

app::serve_options options_for(const std::string& upstream_url) {
  app::serve_options go;
  go.http.listen = "127.0.0.1:0";
  go.http.threads = 1;
  go.upstream.urls = {upstream_url};
  go.routing.max_attempts = 1;
  return go;
}

std::string stream_request() {
  const std::string body = test::chat_body(true);
  return "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

// Reads from `c` until `until` holds for what arrived (or the socket fails); returns it all.
std::string read_until(test::client_socket& c, const std::function<bool(const std::string&)>& until) {
  std::string got;
  char buf[8192];
  boost::system::error_code ec;
  while (!until(got)) {
    const std::size_t n = c.sock.read_some(test::net::buffer(buf), ec);
    if (ec) break;
    got.append(buf, n);
  }
  return got;
}

bool has(const std::string& s, std::string_view what) { return s.find(what) != std::string::npos; }

}  // namespace

// The upstream's head comes with the start of an event whose rest comes after a pause: the client
// gets the head at once, then the whole event and the end after the pause.
TEST(ResponseTiming, HeadIsNotHeldBehindAnIncompleteEvent) {
  const std::string event = content_event("held?");
  const std::size_t cut = event.size() / 2;
  scripted_upstream up({{0ms, kTimingHead + chunk(event.substr(0, cut))},
                        {kPause, chunk(event.substr(cut)) + chunk("data: [DONE]\n\n") + "0\r\n\r\n"}});
  gateway_box g(options_for(up.url()));
  test::client_socket c(g.port);
  const auto start = clock_type::now();
  c.send(stream_request());
  const std::string head = read_until(c, [](const std::string& s) { return has(s, "\r\n\r\n"); });
  const auto head_took = since(start);
  EXPECT_EQ(head.substr(0, 15), "HTTP/1.1 200 OK");
  EXPECT_LT(head_took, kPromptly) << "the head waited for the rest of the event";
  const std::string rest = read_until(c, [](const std::string& s) { return has(s, "0\r\n\r\n"); });
  const std::string all = head + rest;
  EXPECT_TRUE(has(all, "held?")) << all;
  EXPECT_TRUE(has(all, "data: [DONE]")) << all;
  EXPECT_GE(since(start), kPause - 100ms);
}

// Two events come with the head, the end after a pause: head and both events reach the client at
// once (they are written together, not kept for the next read).
TEST(ResponseTiming, EventsThatCameWithTheHeadGoOutAtOnce) {
  scripted_upstream up({{0ms, kTimingHead + chunk(content_event("first") + content_event("second"))},
                        {kPause, chunk("data: [DONE]\n\n") + "0\r\n\r\n"}});
  gateway_box g(options_for(up.url()));
  test::client_socket c(g.port);
  const auto start = clock_type::now();
  c.send(stream_request());
  const std::string early = read_until(c, [](const std::string& s) { return has(s, "second"); });
  EXPECT_LT(since(start), kPromptly) << early;
  EXPECT_EQ(early.substr(0, 15), "HTTP/1.1 200 OK");
  EXPECT_TRUE(has(early, "first"));
  EXPECT_FALSE(has(early, "[DONE]"));
  const std::string rest = read_until(c, [](const std::string& s) { return has(s, "0\r\n\r\n"); });
  EXPECT_TRUE(has(rest, "data: [DONE]")) << rest;
}

// A keep-alive connection that sends its next request in time is served again; one that stays idle
// past idle-timeout is closed by the gateway within about a watchdog tick.
TEST(ResponseTiming, KeepAliveConnectionIsServedAgainAndClosedWhenIdle) {
  sim::options so;
  so.listen = "127.0.0.1:0";
  so.tokens = 3;
  test::sim_box sim(so);
  ASSERT_NE(sim.port, 0);
  auto go = options_for(sim.url());
  go.http.idle_timeout = 600ms;
  gateway_box g(go);

  test::client_socket c(g.port);
  for (int i = 0; i < 3; ++i) {
    if (i > 0) std::this_thread::sleep_for(200ms);  // idle, but well inside idle-timeout
    c.send(stream_request());
    const std::string got = read_until(c, [](const std::string& s) { return has(s, "0\r\n\r\n"); });
    ASSERT_TRUE(has(got, "data: [DONE]")) << "request " << i << ": " << got;
  }
  const auto idle_from = clock_type::now();  // the gateway has been idle since about now
  char buf[64];
  boost::system::error_code ec;
  const std::size_t n = c.sock.read_some(test::net::buffer(buf), ec);
  const auto closed_after = since(idle_from);
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(ec, test::net::error::eof) << ec.message();
  EXPECT_GE(closed_after, go.http.idle_timeout - 100ms);
  EXPECT_LE(closed_after, go.http.idle_timeout + 250ms + kPromptly + 500ms);
}

// http::connection on its own, to a peer on 127.0.0.1, both with small socket buffers: a write of
// some KiB fills them.
struct small_pipe {
  test::net::io_context io;
  test::tcp::socket peer{io};
  http::server_options opts;
  std::unique_ptr<http::connection> conn;

  small_pipe() {
    test::tcp::acceptor a(io, test::tcp::endpoint(test::net::ip::make_address("127.0.0.1"), 0));
    peer.connect(a.local_endpoint());
    test::tcp::socket accepted = a.accept();
    const int small = 4096;
    ::setsockopt(accepted.native_handle(), SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    ::setsockopt(peer.native_handle(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    conn = std::make_unique<http::connection>(std::move(accepted), opts);
  }
  // Runs the loop while a thread reads `n` bytes at the peer (fewer if its read fails); those bytes.
  std::string run_reading(std::size_t n) {
    std::string got;
    std::thread reader([&] {
      char buf[8192];
      boost::system::error_code rec;
      while (got.size() < n) {
        const std::size_t k = peer.read_some(test::net::buffer(buf), rec);
        if (rec) break;
        got.append(buf, k);
      }
    });
    io.run_for(10s);
    reader.join();
    return got;
  }
  // Spawns conn->write_chunk(data); `wrote` is set when it ends (true: written).
  void spawn_write_chunk(const std::string& data, std::optional<bool>& wrote) {
    net::co_spawn(io, [this, &data, &wrote]() -> task<void> {
      auto w = co_await conn->write_chunk(data);
      wrote = w.has_value();
    }, net::detached);
  }
};

// A held head meets a socket that takes nothing (the peer has not read yet), so the head's own
// asynchronous write runs before the piece's. The peer must receive every byte once, in order: what
// was queued before, the head, the chunk.
TEST(ResponseTiming, HeldHeadIsWrittenWholeWhenTheSocketIsFull) {
  small_pipe p;
  // Fill the path to the peer until the socket takes nothing more.
  std::string queued;
  const std::string filler(1024, 'f');
  while (true) {
    const ssize_t n = ::send(p.conn->socket().native_handle(), filler.data(), filler.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n <= 0) break;
    queued.append(filler.data(), static_cast<std::size_t>(n));
  }
  ASSERT_FALSE(queued.empty());

  test::bhttp::response<test::bhttp::empty_body> head{test::bhttp::status::ok, 11};
  head.set(test::bhttp::field::content_type, "text/event-stream");
  head.set("x-request-id", std::string(300, 'r'));  // a head of some size
  p.conn->hold_head(head);
  ASSERT_TRUE(p.conn->holds_head());
  auto expected_head = head;
  expected_head.chunked(true);
  const std::string head_bytes = runtime::head_bytes(expected_head.base());

  const std::string payload(20000, 'p');
  std::optional<bool> wrote;
  p.spawn_write_chunk(payload, wrote);
  p.io.poll();  // the write runs until it waits on the full socket
  ASSERT_FALSE(wrote.has_value()) << "the socket was expected to be full";
  EXPECT_TRUE(p.conn->holds_head()) << "the socket took none of the head";

  const std::string expected = queued + head_bytes + chunk(payload);
  const std::string got = p.run_reading(expected.size());
  ASSERT_TRUE(wrote.has_value());
  EXPECT_TRUE(*wrote);
  EXPECT_FALSE(p.conn->holds_head());
  EXPECT_EQ(p.conn->bytes_written(), head_bytes.size() + chunk(payload).size());
  EXPECT_TRUE(got == expected) << "got " << got.size() << " bytes, expected " << expected.size();
}

// try_write_chunk(): a chunk the socket takes whole goes out at once (true, counted); a chunk larger
// than the socket takes is begun (false: the size line and part of the data sent) and write_chunk()
// with the same bytes sends the rest. The peer receives each chunk once, whole and in order, and the
// next try starts clean.
TEST(ResponseTiming, ATriedChunkIsWrittenWholeOrFinishedByWriteChunk) {
  small_pipe p;
  const std::string first = content_event("hello");
  ASSERT_TRUE(p.conn->try_write_chunk(first)) << "an empty socket takes a small chunk at once";
  EXPECT_EQ(p.conn->bytes_written(), chunk(first).size());
  EXPECT_FALSE(p.conn->holds_head());

  const std::string big(200000, 'b');  // far more than the socket's buffers hold
  ASSERT_FALSE(p.conn->try_write_chunk(big)) << "the socket cannot take 200,000 bytes at once";
  std::optional<bool> wrote;
  p.spawn_write_chunk(big, wrote);
  const std::string expected = chunk(first) + chunk(big);
  const std::string got = p.run_reading(expected.size());
  ASSERT_TRUE(wrote.has_value());
  EXPECT_TRUE(*wrote);
  EXPECT_FALSE(p.conn->holds_head()) << "the size line went out with the rest";
  EXPECT_EQ(p.conn->bytes_written(), expected.size());
  EXPECT_TRUE(got == expected) << "got " << got.size() << " bytes, expected " << expected.size();

  const std::string last = content_event("again");
  ASSERT_TRUE(p.conn->try_write_chunk(last)) << "the drained socket takes the next chunk at once";
  EXPECT_EQ(p.run_reading(chunk(last).size()), chunk(last));
}

// What an open slow stream holds once its first event is through: its relay buffer and its
// upstream connection's read buffer, both small (the 4 KiB of the upstream head read are given
// back; they used to stay for the stream's life behind a chunk's trailing CRLF).
TEST(ResponseTiming, OpenSlowStreamsHoldOnlySmallBuffers) {
  sim::options so;
  so.listen = "127.0.0.1:0";
  so.tokens = 4;
  so.token_delay = 2s;
  test::sim_box sim(so);
  ASSERT_NE(sim.port, 0);
  gateway_box g(options_for(sim.url()));
  auto& m = g.gw.stream_stats();

  constexpr int kStreams = 20;
  std::vector<std::unique_ptr<test::client_socket>> clients;
  for (int i = 0; i < kStreams; ++i) {
    clients.push_back(std::make_unique<test::client_socket>(g.port));
    clients.back()->send(stream_request());
  }
  for (auto& c : clients) {  // each stream's first content event has gone through
    const std::string got = read_until(*c, [](const std::string& s) { return has(s, "\"content\""); });
    ASSERT_TRUE(has(got, "\"content\"")) << got;
  }
  ASSERT_LT(test::wait_until([&] { return m.stream_active_buffers().Value() == kStreams; }), 5s);
  const double held = m.stream_buffered_bytes().Value();
  std::printf("%d open streams hold %.0f buffered bytes (%.0f per stream)\n", kStreams, held, held / kStreams);
  // A stream's relay buffer starts at stream-buffer-initial (1 KiB) and its upstream read window
  // at 512 bytes; a retained 4 KiB head-read buffer would put a stream above 5 KiB.
  EXPECT_GT(held, 0);
  EXPECT_LE(held, kStreams * 2048.0);
}
