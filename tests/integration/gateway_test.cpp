// The gateway against the in-process simulator on 127.0.0.1:0: relay fidelity, concurrency,
// cancellation at every phase, upstream failures, bad input, and secrecy of the upstream key.
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

#include "app/gateway.hpp"
#include "config/option_table.hpp"
#include "loadgen/loadgen.hpp"
#include "sim/server.hpp"
#include "test_client.hpp"

using namespace sluice;
using namespace std::chrono_literals;
using test::bhttp::verb;

namespace {

constexpr const char* kUpstreamKey = "sk-test-PLANTED-upstream-key-7f3a9c";

#if defined(__SANITIZE_ADDRESS__)
constexpr auto kPromptly = 500ms;  // sanitizers slow everything down several times
#else
constexpr auto kPromptly = 100ms;
#endif

class GatewayTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    sim::options so;
    so.listen = "127.0.0.1:0";
    so.threads = 2;
    so.tokens = 8;
    so.token_size = 5;
    sim_ = new sim::server(so);
    auto sp = sim_->start();
    ASSERT_TRUE(sp.has_value()) << sp.err().message;

    app::serve_options go;
    go.http.listen = "127.0.0.1:0";
    go.http.threads = 2;
    go.http.header_timeout = 300ms;
    go.upstream.urls = {"http://127.0.0.1:" + std::to_string(sp->port())};
    // These tests are about one exchange each: no retries, and no circuit that the fault cases
    // (which share this gateway) could open. Retries and circuits: resilience_test.cpp.
    go.routing.max_attempts = 1;
    go.routing.circuit_failures = 1000000;
    go.routing.circuit_error_rate = 0;
    auto made = app::gateway::make(go, kUpstreamKey);
    ASSERT_TRUE(made.has_value()) << made.err().message;
    gw_ = std::move(made).value().release();
    auto gp = gw_->start();
    ASSERT_TRUE(gp.has_value()) << gp.err().message;
    port_ = gp->port();
    sim_port_ = sp->port();
  }
  static void TearDownTestSuite() {
    delete gw_;
    delete sim_;
    gw_ = nullptr;
    sim_ = nullptr;
  }

  static sim::server* sim_;
  static app::gateway* gw_;
  static std::uint16_t port_;
  static std::uint16_t sim_port_;
};

sim::server* GatewayTest::sim_ = nullptr;
app::gateway* GatewayTest::gw_ = nullptr;
std::uint16_t GatewayTest::port_ = 0;
std::uint16_t GatewayTest::sim_port_ = 0;

boost::json::value parse_json(const std::string& s) {
  boost::system::error_code ec;
  auto v = boost::json::parse(s, ec);
  EXPECT_FALSE(ec) << s;
  return v;
}

void expect_openai_error(const test::bhttp::response<test::bhttp::string_body>& res, unsigned status,
                         std::string_view param = {}) {
  EXPECT_EQ(res.result_int(), status) << res.body();
  auto v = parse_json(res.body());
  ASSERT_TRUE(v.is_object());
  auto& e = v.at("error").as_object();
  EXPECT_TRUE(e.at("message").is_string());
  EXPECT_TRUE(e.at("type").is_string());
  EXPECT_TRUE(e.contains("param"));
  EXPECT_TRUE(e.contains("code"));
  if (!param.empty()) {
    EXPECT_EQ(e.at("param").as_string(), param);
  }
  EXPECT_EQ(res[test::bhttp::field::content_type], "application/json");
}

std::string first_line(const std::string& raw) { return raw.substr(0, raw.find("\r\n")); }

}  // namespace

TEST_F(GatewayTest, StreamIsByteIdenticalToDirectRequest) {
  auto direct = test::post_chat(sim_port_, true);
  auto via = test::post_chat(port_, true);
  ASSERT_EQ(direct.result_int(), 200u);
  ASSERT_EQ(via.result_int(), 200u) << via.body();
  EXPECT_EQ(via.body(), direct.body());
  EXPECT_NE(via.body().find("data: [DONE]"), std::string::npos);
  EXPECT_EQ(via[test::bhttp::field::content_type], "text/event-stream");
  EXPECT_EQ(via[test::bhttp::field::cache_control], "no-cache");
  EXPECT_EQ(via["x-accel-buffering"], "no");
  EXPECT_TRUE(via.chunked());
}

// A fast stream of small events: the upstream reads grow to their largest window and each one
// carries dozens of events (decoded from many HTTP chunks, scanned, written with one write). The
// bytes must still be exactly the simulator's, usage chunk included.
TEST_F(GatewayTest, FastStreamOfSmallEventsIsByteIdentical) {
  const std::vector<std::pair<std::string, std::string>> h = {{"x-sim-tokens", "6000"}, {"x-sim-token-size", "3"}, {"x-sim-token-delay", "0ms"}};
  const std::string body = test::chat_body(true, R"(,"stream_options":{"include_usage":true})");
  auto direct = test::call(sim_port_, verb::post, "/v1/chat/completions", body, h);
  auto via = test::call(port_, verb::post, "/v1/chat/completions", body, h);
  ASSERT_EQ(direct.result_int(), 200u);
  ASSERT_EQ(via.result_int(), 200u) << via.body().substr(0, 500);
  EXPECT_GT(direct.body().size(), 6000u * 100);
  EXPECT_TRUE(via.body() == direct.body()) << "sizes " << via.body().size() << " vs " << direct.body().size();
  EXPECT_NE(via.body().find(R"("usage":{)"), std::string::npos);
}

TEST_F(GatewayTest, NonStreamAndCompletionsAndModelsAreRelayed) {
  auto direct = test::post_chat(sim_port_, false);
  auto via = test::post_chat(port_, false);
  ASSERT_EQ(via.result_int(), 200u) << via.body();
  EXPECT_EQ(via.body(), direct.body());
  EXPECT_TRUE(parse_json(via.body()).as_object().contains("choices"));

  auto comp = test::call(port_, verb::post, "/v1/completions", R"({"model":"sim-1","prompt":"hi","stream":true})");
  ASSERT_EQ(comp.result_int(), 200u) << comp.body();
  EXPECT_NE(comp.body().find("data: [DONE]"), std::string::npos);

  auto models = test::call(port_, verb::get, "/v1/models");
  ASSERT_EQ(models.result_int(), 200u);
  EXPECT_EQ(parse_json(models.body()).at("object").as_string(), "list");
}

TEST_F(GatewayTest, UsageChunkIsForwardedWhenAsked) {
  auto via = test::call(port_, verb::post, "/v1/chat/completions",
                        test::chat_body(true, R"(,"stream_options":{"include_usage":true})"));
  ASSERT_EQ(via.result_int(), 200u);
  EXPECT_NE(via.body().find("\"usage\""), std::string::npos);
}

TEST_F(GatewayTest, RequestIdIsKeptWhenSaneAndGeneratedOtherwise) {
  auto kept = test::post_chat(port_, false, {{"x-request-id", "client-id-123"}});
  EXPECT_EQ(kept["x-request-id"], "client-id-123");
  auto replaced = test::post_chat(port_, false, {{"x-request-id", "bad id with spaces <script>"}});
  EXPECT_EQ(replaced["x-request-id"].size(), 32u);
  auto generated = test::call(port_, verb::get, "/healthz");
  EXPECT_EQ(generated.result_int(), 200u);
  EXPECT_EQ(generated["x-request-id"].size(), 32u);
  auto err = test::call(port_, verb::get, "/nope");
  EXPECT_EQ(err["x-request-id"].size(), 32u);
}

TEST_F(GatewayTest, ThousandConcurrentStreamsAllComplete) {
  loadgen::options lo;
  lo.target = "http://127.0.0.1:" + std::to_string(port_);
  lo.concurrency = 1000;
  lo.requests = 1000;
  lo.model = "sim-1";
  lo.duration_limit = 60s;
  lo.threads = 2;
  lo.progress = false;
  lo.headers = {"x-sim-token-delay: 5ms"};
  auto r = loadgen::run(lo);
  ASSERT_TRUE(r.has_value()) << r.err().message;
  EXPECT_EQ(r->ok, 1000u) << loadgen::format_text(*r);
  EXPECT_EQ(r->failed, 0u) << loadgen::format_text(*r);
  EXPECT_GE(r->peak_open_streams, 500u);
}

TEST_F(GatewayTest, KeepAliveConnectionsToUpstreamAreReused) {
  auto before = sim_->snapshot().connections_accepted;
  for (int i = 0; i < 20; ++i) ASSERT_EQ(test::post_chat(port_, false).result_int(), 200u);
  auto opened = sim_->snapshot().connections_accepted - before;
  EXPECT_LE(opened, 4u) << "each of the 2 worker threads should reuse its pooled connection";
}

// --- cancellation ----------------------------------------------------------------------------

namespace {
// Sends a streaming request with `headers`, lets `ready` become true, disconnects, and returns how
// long the simulator took to see its upstream connection close.
std::chrono::milliseconds disconnect_and_time(sim::server& sim, std::uint16_t port, const std::string& headers,
                                              const std::function<bool(test::client_socket&)>& ready) {
  auto aborted_before = sim.snapshot().streams_aborted;
  test::client_socket c(port);
  std::string body = test::chat_body(true);
  c.send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + headers +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  EXPECT_TRUE(ready(c));
  c.close();
  return test::wait_until([&] { return sim.snapshot().streams_aborted > aborted_before; });
}
}  // namespace

TEST_F(GatewayTest, ClientDisconnectWhileWaitingForUpstreamHeadClosesUpstream) {
  auto req_before = sim_->snapshot().requests;
  auto took = disconnect_and_time(*sim_, port_, "x-sim-header-delay: 10s\r\n", [&](test::client_socket&) {
    return test::wait_until([&] { return sim_->snapshot().requests > req_before; }) < 5s;
  });
  EXPECT_LT(took, kPromptly);
}

TEST_F(GatewayTest, ClientDisconnectBeforeFirstTokenClosesUpstream) {
  auto took = disconnect_and_time(*sim_, port_, "x-sim-ttft: 10s\r\n", [&](test::client_socket& c) {
    char buf[512];
    boost::system::error_code ec;
    std::size_t n = c.sock.read_some(test::net::buffer(buf), ec);  // the response head arrives first
    return !ec && std::string_view(buf, n).find("200 OK") != std::string_view::npos;
  });
  EXPECT_LT(took, kPromptly);
}

TEST_F(GatewayTest, ClientDisconnectMidStreamClosesUpstream) {
  auto took = disconnect_and_time(*sim_, port_, "x-sim-token-delay: 50ms\r\nx-sim-tokens: 1000\r\n",
                                  [&](test::client_socket& c) {
                                    std::string got;
                                    char buf[4096];
                                    boost::system::error_code ec;
                                    while (got.find("\"content\"") == std::string::npos && !ec) {
                                      std::size_t n = c.sock.read_some(test::net::buffer(buf), ec);
                                      got.append(buf, n);
                                    }
                                    return !ec;
                                  });
  EXPECT_LT(took, kPromptly);
}

TEST_F(GatewayTest, ClientDisconnectWhileWaitingForAWholeAnswerClosesUpstream) {
  // Counted by the simulator's completions in flight, not its open connections: the request may
  // ride a keep-alive connection an earlier test left in the gateway's pool, which adds none.
  const auto before = sim_->snapshot();
  test::client_socket c(port_);
  const std::string body = test::chat_body(false);
  c.send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nx-sim-ttft: 10s\r\n"
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  ASSERT_LT(test::wait_until([&] { return sim_->snapshot().completions_running > before.completions_running; }), 5s);
  c.close();
  const auto took = test::wait_until([&] {
    const auto now = sim_->snapshot();
    return now.completions_running <= before.completions_running && now.active_connections <= before.active_connections;
  });
  EXPECT_LT(took, kPromptly) << "the upstream exchange is closed when the client leaves";
}

// A request sent on the same connection while a stream is still running (pipelined) is not a
// disconnect: the stream completes, then the next request is answered on the same connection.
TEST_F(GatewayTest, RequestSentDuringAStreamIsServedAfterIt) {
  test::client_socket c(port_);
  const std::string body = test::chat_body(true);
  const std::string req = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                          "x-sim-token-delay: 30ms\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  c.send(req);
  std::string got;
  char buf[8192];
  boost::system::error_code ec;
  while (got.find("\"content\"") == std::string::npos && !ec) got.append(buf, c.sock.read_some(test::net::buffer(buf), ec));
  ASSERT_FALSE(ec) << ec.message();
  c.send(req);  // while the first stream still has tokens to go
  auto count = [&](std::string_view what) {
    std::size_t n = 0;
    for (auto at = got.find(what); at != std::string::npos; at = got.find(what, at + 1)) ++n;
    return n;
  };
  while (count("data: [DONE]") < 2 && !ec) got.append(buf, c.sock.read_some(test::net::buffer(buf), ec));
  EXPECT_FALSE(ec) << ec.message() << "\n" << got;
  EXPECT_EQ(count("HTTP/1.1 200 OK"), 2u);
  EXPECT_EQ(count("data: [DONE]"), 2u);
  EXPECT_EQ(got.find("\"error\""), std::string::npos) << got;
}

// --- upstream failures ----------------------------------------------------------------------

TEST_F(GatewayTest, UpstreamResetMidStreamGivesInBandErrorAndNoDone) {
  auto res = test::post_chat(port_, true, {{"x-sim-fault", "reset"}, {"x-sim-fault-after", "3"}});
  ASSERT_EQ(res.result_int(), 200u);
  EXPECT_NE(res.body().find("\"content\""), std::string::npos) << "tokens before the reset are relayed";
  EXPECT_NE(res.body().find("data: {\"error\":"), std::string::npos) << res.body();
  EXPECT_EQ(res.body().find("[DONE]"), std::string::npos);
}

TEST_F(GatewayTest, MalformedUpstreamEventGivesInBandError) {
  auto res = test::post_chat(port_, true, {{"x-sim-fault", "malformed"}, {"x-sim-fault-after", "2"}});
  ASSERT_EQ(res.result_int(), 200u);
  EXPECT_NE(res.body().find("data: {\"error\":"), std::string::npos) << res.body();
  EXPECT_NE(res.body().find("upstream_protocol_error"), std::string::npos);
  EXPECT_EQ(res.body().find("[DONE]"), std::string::npos);
}

TEST_F(GatewayTest, UpstreamErrorStatusIsPassedOnWithOpenAIBody) {
  auto res = test::post_chat(port_, true, {{"x-sim-fault", "5xx"}});
  expect_openai_error(res, 500);
  auto limited = test::post_chat(port_, false, {{"x-sim-fault", "429"}});
  expect_openai_error(limited, 429);
  EXPECT_FALSE(limited[test::bhttp::field::retry_after].empty());
  EXPECT_FALSE(limited["x-ratelimit-remaining-requests"].empty());
}

TEST_F(GatewayTest, UnreachableUpstreamGives502) {
  app::serve_options go;
  go.http.listen = "127.0.0.1:0";
  go.http.threads = 1;
  test::refused_port dead;  // nobody listens there, and nobody else can bind it meanwhile
  go.upstream.urls = {dead.url()};
  auto made = app::gateway::make(go, "");
  ASSERT_TRUE(made.has_value()) << made.err().message;
  app::gateway& gw = **made;
  auto ep = gw.start();
  ASSERT_TRUE(ep.has_value());
  expect_openai_error(test::post_chat(ep->port(), true), 502);
}

// --- bad input --------------------------------------------------------------------------------

TEST_F(GatewayTest, OversizedHeadGets431) {
  test::client_socket c(port_);
  c.send("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(20 * 1024, 'a') + "\r\n\r\n");
  auto raw = c.read_all();
  EXPECT_EQ(first_line(raw), "HTTP/1.1 431 Request Header Fields Too Large");
  EXPECT_NE(raw.find("\"error\""), std::string::npos);
}

TEST_F(GatewayTest, OversizedBodyGets413) {
  test::client_socket c(port_);
  c.send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(5 * 1024 * 1024) + "\r\n\r\n{");
  auto raw = c.read_all();
  EXPECT_EQ(first_line(raw), "HTTP/1.1 413 Payload Too Large");
}

TEST_F(GatewayTest, SlowHeadGets408) {
  test::client_socket c(port_);
  c.send("GET /healthz HTTP/1.1\r\nHost: x\r\n");  // never finishes the head
  auto raw = c.read_all();
  EXPECT_EQ(first_line(raw), "HTTP/1.1 408 Request Timeout");
}

TEST_F(GatewayTest, MalformedHttpGets400AndClose) {
  test::client_socket c(port_);
  c.send("THIS IS NOT HTTP\r\n\r\n");
  auto raw = c.read_all();  // returns only because the gateway closed
  EXPECT_EQ(first_line(raw), "HTTP/1.1 400 Bad Request");
  EXPECT_NE(raw.find("invalid_request_error"), std::string::npos);
}

TEST_F(GatewayTest, MalformedAndWronglyTypedJsonGet400WithParam) {
  expect_openai_error(test::call(port_, verb::post, "/v1/chat/completions", "{not json"), 400);
  expect_openai_error(test::call(port_, verb::post, "/v1/chat/completions", "[1,2]"), 400);
  expect_openai_error(test::call(port_, verb::post, "/v1/chat/completions", R"({"messages":[]})"), 400, "model");
  expect_openai_error(test::call(port_, verb::post, "/v1/chat/completions", R"({"model":"m","messages":"hi"})"), 400,
                      "messages");
  expect_openai_error(
      test::call(port_, verb::post, "/v1/chat/completions", R"({"model":"m","messages":[{"content":"x"}]})"), 400,
      "messages[0].role");
  expect_openai_error(test::call(port_, verb::post, "/v1/chat/completions",
                                 R"({"model":"m","messages":[{"role":"user"}],"stream":"yes"})"),
                      400, "stream");
  expect_openai_error(test::call(port_, verb::post, "/v1/chat/completions",
                                 R"({"model":"m","messages":[{"role":"user"}],"max_tokens":-5})"),
                      400, "max_tokens");
}

TEST_F(GatewayTest, UnknownRouteAndWrongMethod) {
  expect_openai_error(test::call(port_, verb::get, "/v1/nothing"), 404);
  expect_openai_error(test::call(port_, verb::put, "/v1/chat/completions"), 405);  // GET lists stored ones (ADR 0027)
  expect_openai_error(test::call(port_, verb::post, "/v1/models", "{}"), 405);
}

TEST_F(GatewayTest, ErrorResponsesKeepTheConnectionUsable) {
  test::client_socket c(port_);
  std::string bad = "{oops";
  c.send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(bad.size()) +
         "\r\n\r\n" + bad + "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  auto raw = c.read_all();
  EXPECT_EQ(first_line(raw), "HTTP/1.1 400 Bad Request");
  EXPECT_NE(raw.find("HTTP/1.1 200 OK"), std::string::npos) << raw;
}

// --- secrets ---------------------------------------------------------------------------------

TEST_F(GatewayTest, UpstreamKeyIsSentButNeverShown) {
  auto before = sim_->snapshot().requests_with_auth;
  std::string everything;
  for (auto& r : {test::post_chat(port_, true), test::post_chat(port_, false),
                  test::post_chat(port_, true, {{"x-sim-fault", "5xx"}}),
                  test::post_chat(port_, true, {{"x-sim-fault", "reset"}, {"x-sim-fault-after", "1"}}),
                  test::call(port_, verb::post, "/v1/chat/completions", "{bad"), test::call(port_, verb::get, "/v1/models")}) {
    for (auto& f : r) everything += std::string(f.name_string()) + ": " + std::string(f.value()) + "\n";
    everything += r.body();
  }
  EXPECT_GT(sim_->snapshot().requests_with_auth, before);
  EXPECT_EQ(everything.find(kUpstreamKey), std::string::npos);
  EXPECT_EQ(everything.find("PLANTED"), std::string::npos);
}

// The `routes:` allow-list: a route left out is a 404 counted as route_disabled before anything
// else (no key check, no slot, no upstream); the routes it names and the probes are served.
TEST(GatewayRoutes, ARouteTheAllowListLeavesOutIsA404CountedAsRouteDisabled) {
  sim::options so;
  so.listen = "127.0.0.1:0";
  so.tokens = 3;
  sim::server sim(so);
  auto sp = sim.start();
  ASSERT_TRUE(sp.has_value()) << sp.err().message;
  app::serve_options go;
  go.http.listen = "127.0.0.1:0";
  go.http.threads = 1;
  go.upstream.urls = {"http://127.0.0.1:" + std::to_string(sp->port())};
  go.proxy.routes = {"chat_completions", "models"};
  ASSERT_TRUE(go.validate().has_value());
  auto made = app::gateway::make(go, "");
  ASSERT_TRUE(made.has_value()) << made.err().message;
  auto gp = (*made)->start();
  ASSERT_TRUE(gp.has_value()) << gp.err().message;
  const auto port = gp->port();
  auto refused = test::call(port, verb::post, "/v1/embeddings", R"({"model":"m","input":"x"})");
  expect_openai_error(refused, 404);
  EXPECT_NE(refused.body().find("not enabled"), std::string::npos) << refused.body();
  EXPECT_EQ(test::post_chat(port, false).result_int(), 200u);
  EXPECT_EQ(test::call(port, verb::get, "/v1/models").result_int(), 200u);
  EXPECT_EQ(test::call(port, verb::get, "/healthz").result_int(), 200u);
  const auto metrics = test::call(port, verb::get, "/metrics").body();
  EXPECT_NE(metrics.find("sluice_rejections_total{reason=\"route_disabled\"} 1"), std::string::npos) << metrics;
  EXPECT_EQ(sim.snapshot().completion_requests, 1u) << "the refused request never reached the upstream";
  app::serve_options bad = go;
  bad.proxy.routes = {"chat_completions", "no_such_route"};
  EXPECT_FALSE(bad.validate().has_value()) << "a name that is no route is refused at start-up";
}
