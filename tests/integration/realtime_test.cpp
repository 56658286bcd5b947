// The Realtime API's WebSocket relay (issue 30) through a real gateway in front of the simulator's
// Realtime session: events both ways, a large message passed through in pieces byte for byte,
// binary frames kept binary, a close from either side carried to the other, a vanished client
// ending the upstream session at once, and the refusals (no upgrade, a key, an upstream that refuses).
#include <gtest/gtest.h>

#include <boost/beast/websocket.hpp>
#include <boost/json/parse.hpp>

#include "app/gateway.hpp"
#include "process.hpp"
#include "sim/server.hpp"
#include "test_client.hpp"

using namespace sluice;
using test::bhttp::verb;

namespace {

namespace websocket = boost::beast::websocket;
namespace json = boost::json;
using ws_stream = websocket::stream<test::tcp::socket>;

// A client's session: the upgrade with `headers`, reads under a receive timeout (never a hang).
struct session {
  test::net::io_context ctx;
  ws_stream ws{ctx};

  session(std::uint16_t port, const std::string& target, std::vector<std::pair<std::string, std::string>> headers = {}) {
    ws.next_layer().connect(test::tcp::endpoint(test::net::ip::make_address("127.0.0.1"), port));
    timeval tv{10, 0};
    ::setsockopt(ws.next_layer().native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ws.set_option(websocket::stream_base::decorator([headers](websocket::request_type& r) {
      for (const auto& [k, v] : headers) r.set(k, v);
    }));
    ws.read_message_max(64 * 1024 * 1024);
    ws.handshake(response, "127.0.0.1", target, ec);
  }
  // The next message's text ("" on error).
  std::string next() {
    boost::beast::flat_buffer b;
    ws.read(b, ec);
    return ec ? std::string() : boost::beast::buffers_to_string(b.data());
  }
  // The next event's type (JSON text), skipping none.
  std::string next_type() {
    error_code jec;
    auto v = json::parse(next(), jec);
    if (jec || !v.is_object() || !v.as_object().contains("type")) return "";
    return std::string(v.as_object().at("type").as_string());
  }

  websocket::response_type response;
  boost::system::error_code ec;
};

class Realtime : public ::testing::Test {
 protected:
  void start(const std::string& keys = "", const std::string& sim_key = "", const std::string& gateway_key = "",
             std::uint64_t max_message = 16 * 1024 * 1024, duration idle = std::chrono::seconds(60)) {
    sim::options so;
    so.listen = "127.0.0.1:0";
    so.tokens = 4;
    so.require_key = sim_key;
    sim_ = std::make_unique<sim::server>(so);
    auto sp = sim_->start();
    ASSERT_TRUE(sp.has_value()) << sp.err().message;
    app::serve_options go;
    go.http.listen = "127.0.0.1:0";
    go.http.threads = 1;
    go.upstream.urls = {"http://127.0.0.1:" + std::to_string(sp->port())};
    go.upstream.key_env = "SLUICE_TEST_NO_SUCH_KEY";
    if (!keys.empty()) go.admission.keys_file = test::temp_file_with(keys);
    go.proxy.realtime_max_message_bytes = max_message;
    go.proxy.realtime_idle_timeout = idle;
    ASSERT_TRUE(go.validate().has_value());
    auto made = app::gateway::make(go, gateway_key);  // the gateway's own upstream key ("": none)
    ASSERT_TRUE(made.has_value()) << made.err().message;
    gateway_ = std::move(*made);
    auto gp = gateway_->start();
    ASSERT_TRUE(gp.has_value()) << gp.err().message;
    port_ = gp->port();
  }
  std::uint64_t metric(const std::string& series) {
    const std::string text = test::call(port_, verb::get, "/metrics").body();
    const auto at = text.find("\n" + series + " ");
    return at == std::string::npos ? 0 : std::stoull(text.substr(at + series.size() + 2));
  }

  std::unique_ptr<sim::server> sim_;
  std::unique_ptr<app::gateway> gateway_;
  std::uint16_t port_ = 0;
};

}  // namespace

TEST_F(Realtime, ASessionRelaysEventsBothWaysAndALargeMessageByteForByte) {
  start();
  session s(port_, "/v1/realtime?model=gpt-realtime", {{"authorization", "Bearer sk-own"}});
  ASSERT_FALSE(s.ec) << s.ec.message();
  EXPECT_FALSE(s.response["x-request-id"].empty());
  EXPECT_EQ(s.next_type(), "session.created");
  s.ws.text(true);
  s.ws.write(test::net::buffer(std::string(R"({"type":"session.update","session":{"instructions":"be brief"}})")), s.ec);
  EXPECT_EQ(s.next_type(), "session.updated");
  s.ws.write(test::net::buffer(std::string(R"({"type":"response.create"})")), s.ec);
  std::vector<std::string> types;
  for (std::string t = s.next_type(); !t.empty() && t != "response.done"; t = s.next_type()) types.push_back(t);
  EXPECT_EQ(std::count(types.begin(), types.end(), "response.output_text.delta"), 4) << "the simulator's 4 words";
  const std::string big = R"({"type":"sim.echo","payload":")" + std::string(3 * 1024 * 1024, 'a') + R"("})";
  s.ws.write(test::net::buffer(big), s.ec);
  EXPECT_TRUE(s.next() == big) << "a 3 MiB message came back changed";
  s.ws.binary(true);
  const std::string bytes("\x00\x01\xff\x80 binary", 12);
  s.ws.write(test::net::buffer(bytes), s.ec);
  boost::beast::flat_buffer b;
  s.ws.read(b, s.ec);
  EXPECT_TRUE(s.ws.got_binary());
  EXPECT_EQ(boost::beast::buffers_to_string(b.data()), bytes);
  s.ws.close(websocket::close_code::normal, s.ec);
  EXPECT_LT(test::wait_until([&] { return sim_->snapshot().realtime_closed_by_client == 1; }).count(), 5000)
      << "the client's close reached the upstream";
  EXPECT_LT(test::wait_until([&] { return metric(R"(sluice_requests_total{outcome="ok",route="realtime"})") == 1; }).count(), 5000);
}

TEST_F(Realtime, AVanishedClientEndsTheUpstreamSessionAtOnce) {
  start();
  {
    session s(port_, "/v1/realtime?model=gpt-realtime");
    ASSERT_FALSE(s.ec) << s.ec.message();
    EXPECT_EQ(s.next_type(), "session.created");
    ASSERT_EQ(sim_->snapshot().realtime_open, 1u);
    s.ws.next_layer().close();  // no close frame: the socket is simply gone
  }
  EXPECT_LT(test::wait_until([&] { return sim_->snapshot().realtime_open == 0; }).count(), 5000);
}

TEST_F(Realtime, RefusalsComeBeforeTheUpgrade) {
  start("sk-rt-0001 10 100000 rt\n");
  auto plain = test::call(port_, verb::get, "/v1/realtime?model=gpt-realtime", "", {{"authorization", "Bearer sk-rt-0001"}});
  EXPECT_EQ(plain.result_int(), 400u) << "no upgrade: " << plain.body();
  session no_key(port_, "/v1/realtime?model=gpt-realtime");
  EXPECT_EQ(no_key.response.result_int(), 401u);
  session no_model(port_, "/v1/realtime", {{"authorization", "Bearer sk-rt-0001"}});
  EXPECT_EQ(no_model.response.result_int(), 400u);
  session ok(port_, "/v1/realtime?model=gpt-realtime", {{"authorization", "Bearer sk-rt-0001"}});
  EXPECT_FALSE(ok.ec) << ok.ec.message();
  EXPECT_EQ(ok.next_type(), "session.created");
  EXPECT_EQ(sim_->snapshot().realtime_sessions, 1u) << "only the accepted session reached the upstream";
}

TEST_F(Realtime, AnUpstreamThatRefusesTheGatewaysKeyIsTheGatewaysOwn502) {
  start("", "sk-upstream-right", "sk-upstream-wrong");
  session s(port_, "/v1/realtime?model=gpt-realtime");
  EXPECT_EQ(s.response.result_int(), 502u);
  EXPECT_EQ(sim_->snapshot().realtime_sessions, 0u);
}

TEST_F(Realtime, AMessagePastRealtimeMaxMessageBytesEndsTheSessionCountedAsTheClients) {
  start("", "", "", 64 * 1024);
  session s(port_, "/v1/realtime?model=gpt-realtime");
  ASSERT_FALSE(s.ec) << s.ec.message();
  EXPECT_EQ(s.next_type(), "session.created");
  const std::string small = R"({"type":"sim.echo","payload":")" + std::string(60 * 1024, 'a') + R"("})";
  s.ws.write(test::net::buffer(small), s.ec);
  EXPECT_TRUE(s.next() == small) << "under the bound: passed through";
  const std::string big = R"({"type":"sim.echo","payload":")" + std::string(100 * 1024, 'a') + R"("})";
  s.ws.write(test::net::buffer(big), s.ec);
  // The gateway closes with 1009 while the client may still be writing: whether the client reads
  // that close frame or a reset first is the network's race; that its session ends is not.
  EXPECT_EQ(s.next(), "");
  EXPECT_TRUE(s.ec) << "the session ended";
  EXPECT_LT(test::wait_until([&] { return sim_->snapshot().realtime_open == 0; }).count(), 5000)
      << "the upstream session ended with it";
  EXPECT_LT(test::wait_until([&] {
              return metric(R"(sluice_requests_total{outcome="client_error",route="realtime"})") == 1;
            }).count(), 5000);
}

// realtime-idle-timeout: a client that neither sends nor answers the gateway's pings (it stopped
// reading) ends its session, the upstream's with it, counted as a timeout.
TEST_F(Realtime, AClientSilentPastTheIdleTimeoutEndsTheSession) {
  start("", "", "", 16 * 1024 * 1024, std::chrono::milliseconds(400));
  session s(port_, "/v1/realtime?model=gpt-realtime");
  ASSERT_FALSE(s.ec) << s.ec.message();
  EXPECT_EQ(s.next_type(), "session.created");
  ASSERT_EQ(sim_->snapshot().realtime_open, 1u);
  // No read from here: the gateway's pings go unanswered.
  EXPECT_LT(test::wait_until([&] { return sim_->snapshot().realtime_open == 0; }).count(), 5000);
  EXPECT_LT(test::wait_until([&] { return metric(R"(sluice_requests_total{outcome="timeout",route="realtime"})") == 1; }).count(),
            5000);
}
