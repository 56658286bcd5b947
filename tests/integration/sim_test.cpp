// The simulator over real sockets on 127.0.0.1:0, driven by a small Beast client on the test thread:
// wire shapes, determinism, every fault, prompt notice of departed clients, keep-alive and a few
// thousand concurrent streams. Waits poll the server's counters with a bound; no fixed sleeps.
#include <gtest/gtest.h>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/json.hpp>

#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "runtime/worker_pool.hpp"
#include "sim/server.hpp"

using namespace sluice;
using namespace std::chrono_literals;
namespace http = boost::beast::http;
namespace json = boost::json;

namespace {

using clock_type = std::chrono::steady_clock;
// How soon a departed client must show in the counters (sanitizers slow everything several times).
#if defined(__SANITIZE_ADDRESS__)
constexpr auto prompt_notice = 500ms;
#else
constexpr auto prompt_notice = 100ms;
#endif

const std::string chat_stream_body =
    R"({"model":"sim-1","stream":true,"messages":[{"role":"user","content":"tell me about sluices"}]})";

struct reply {
  unsigned status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  error_code ec;          // what ended the read, if not the end of the message
  bool complete = false;  // the whole message arrived
  bool timed_out = false;
};

std::size_t count_events(std::string_view body) {
  std::size_t n = 0;
  for (auto p = body.find("\n\n"); p != std::string_view::npos; p = body.find("\n\n", p + 2)) ++n;
  return n;
}

std::vector<std::string> event_data(std::string_view body) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  for (auto end = body.find("\n\n"); end != std::string_view::npos; end = body.find("\n\n", pos)) {
    auto ev = body.substr(pos, end - pos);
    EXPECT_EQ(ev.substr(0, 6), "data: ") << ev;
    out.emplace_back(ev.substr(6));
    pos = end + 2;
  }
  return out;
}

// Sends one request and reads the response; stops early once `stop_after_events` SSE events arrived.
task<void> do_exchange(tcp::socket* s, boost::beast::flat_buffer* buf, http::request<http::string_body> req,
                       std::size_t stop_after_events, reply* out) {
  error_code ec;
  req.prepare_payload();
  co_await http::async_write(*s, req, ec_out(ec));
  if (ec) {
    out->ec = ec;
    co_return;
  }
  http::response_parser<http::string_body> p;
  p.body_limit(boost::none);
  co_await http::async_read_header(*s, *buf, p, ec_out(ec));
  if (ec) {
    out->ec = ec;
    co_return;
  }
  out->status = p.get().result_int();
  for (const auto& f : p.get()) {
    std::string name(f.name_string());
    for (auto& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    out->headers[name] = std::string(f.value());
  }
  while (!p.is_done()) {
    co_await http::async_read_some(*s, *buf, p, ec_out(ec));
    if (ec) break;
    if (stop_after_events && count_events(p.get().body()) >= stop_after_events) break;
  }
  out->body = p.get().body();
  out->complete = p.is_done();
  out->ec = ec;
}

// One client connection, driven on the test thread with a deadline per exchange.
class client {
 public:
  explicit client(std::uint16_t port) : sock_(ioc_) {
    sock_.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
  }

  reply send(http::verb method, std::string target, std::string body = {},
             std::vector<std::pair<std::string, std::string>> headers = {}, std::size_t stop_after_events = 0,
             clock_type::duration limit = 10s) {
    http::request<http::string_body> req{method, target, 11};
    req.set(http::field::host, "127.0.0.1");
    if (!body.empty()) req.set(http::field::content_type, "application/json");
    for (auto& [k, v] : headers) req.set(k, v);
    req.body() = std::move(body);
    reply out;
    net::co_spawn(ioc_, do_exchange(&sock_, &buf_, std::move(req), stop_after_events, &out), net::detached);
    ioc_.restart();
    ioc_.run_for(limit);
    if (!ioc_.stopped()) {  // the deadline passed with the read still pending
      out.timed_out = true;
      close();
      ioc_.restart();
      ioc_.run();
    }
    return out;
  }
  reply chat(std::vector<std::pair<std::string, std::string>> headers = {}, std::string body = chat_stream_body,
             std::size_t stop_after_events = 0, clock_type::duration limit = 10s) {
    return send(http::verb::post, "/v1/chat/completions", std::move(body), std::move(headers), stop_after_events, limit);
  }
  void write_only(std::string body, std::vector<std::pair<std::string, std::string>> headers) {
    http::request<http::string_body> req{http::verb::post, "/v1/chat/completions", 11};
    req.set(http::field::host, "127.0.0.1");
    for (auto& [k, v] : headers) req.set(k, v);
    req.body() = std::move(body);
    req.prepare_payload();
    http::write(sock_, req);
  }
  void close() {
    error_code ec;
    sock_.close(ec);
  }

 private:
  net::io_context ioc_;
  tcp::socket sock_;
  boost::beast::flat_buffer buf_;
};

bool eventually(const std::function<bool()>& pred, clock_type::duration limit = 5s) {
  auto deadline = clock_type::now() + limit;
  while (!pred()) {
    if (clock_type::now() > deadline) return pred();
    std::this_thread::yield();
  }
  return true;
}

struct sim_fixture : ::testing::Test {
  void start(sim::options o = {}) {
    o.listen = "127.0.0.1:0";
    if (o.threads == 1) o.threads = 2;
    server = std::make_unique<sim::server>(o);
    auto ep = server->start();
    ASSERT_TRUE(ep.has_value()) << ep.err().message;
    port = ep->port();
    ASSERT_NE(port, 0);
  }
  sim::stats stats() const { return server->snapshot(); }
  std::unique_ptr<sim::server> server;
  std::uint16_t port = 0;
};

json::object error_of(const reply& r) {
  auto v = json::parse(r.body).as_object();
  auto e = v.at("error").as_object();
  for (auto key : {"message", "type", "param", "code"}) EXPECT_TRUE(e.contains(key)) << key;
  return e;
}

}  // namespace

TEST_F(sim_fixture, StreamShapeEndsWithDone) {
  start();
  client c(port);
  auto r = c.chat({{"x-sim-tokens", "5"}});
  ASSERT_TRUE(r.complete) << r.ec.message();
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.headers["content-type"].rfind("text/event-stream", 0), 0u);
  EXPECT_EQ(r.headers["transfer-encoding"], "chunked");
  auto ev = event_data(r.body);
  ASSERT_EQ(ev.size(), 1u + 5u + 1u + 1u);
  EXPECT_EQ(ev.back(), "[DONE]");
  auto first = json::parse(ev[0]).as_object();
  EXPECT_EQ(first.at("object").as_string(), "chat.completion.chunk");
  EXPECT_EQ(first.at("choices").as_array()[0].as_object().at("delta").as_object().at("role").as_string(), "assistant");
  auto last = json::parse(ev[ev.size() - 2]).as_object();
  EXPECT_EQ(last.at("choices").as_array()[0].as_object().at("finish_reason").as_string(), "stop");
  auto s = stats();
  EXPECT_EQ(s.streams_started, 1u);
  EXPECT_EQ(s.streams_completed, 1u);
  EXPECT_EQ(s.responses_2xx, 1u);
}

TEST_F(sim_fixture, StreamWithUsageAndLegacyCompletions) {
  start();
  client c(port);
  auto r = c.chat({},
                  R"({"model":"m","stream":true,"stream_options":{"include_usage":true},"max_tokens":3,"messages":[{"role":"user","content":"hi"}]})");
  ASSERT_TRUE(r.complete);
  auto ev = event_data(r.body);
  ASSERT_EQ(ev.size(), 1u + 3u + 1u + 1u + 1u);
  EXPECT_EQ(json::parse(ev[4]).as_object().at("choices").as_array()[0].as_object().at("finish_reason").as_string(), "length");
  auto usage = json::parse(ev[5]).as_object();
  EXPECT_TRUE(usage.at("choices").as_array().empty());
  EXPECT_EQ(usage.at("usage").as_object().at("completion_tokens").as_int64(), 3);
  EXPECT_EQ(ev[6], "[DONE]");

  auto legacy = c.send(http::verb::post, "/v1/completions", R"({"model":"m","prompt":"abc","stream":true})",
                       {{"x-sim-tokens", "2"}});
  ASSERT_TRUE(legacy.complete);
  auto lev = event_data(legacy.body);
  ASSERT_EQ(lev.size(), 2u + 1u + 1u);
  EXPECT_EQ(json::parse(lev[0]).as_object().at("object").as_string(), "text_completion");
  EXPECT_EQ(lev.back(), "[DONE]");
}

TEST_F(sim_fixture, NonStreamShapes) {
  start();
  client c(port);
  auto r = c.chat({{"x-sim-tokens", "4"}, {"x-sim-token-size", "3"}},
                  R"({"model":"sim-1","messages":[{"role":"user","content":"hi"}]})");
  ASSERT_TRUE(r.complete);
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.headers["content-length"], std::to_string(r.body.size()));
  auto v = json::parse(r.body).as_object();
  EXPECT_EQ(v.at("object").as_string(), "chat.completion");
  EXPECT_EQ(v.at("choices").as_array()[0].as_object().at("message").as_object().at("content").as_string().size(), 12u);
  EXPECT_EQ(v.at("usage").as_object().at("total_tokens").as_int64(),
            v.at("usage").as_object().at("prompt_tokens").as_int64() + 4);

  auto legacy = c.send(http::verb::post, "/v1/completions", R"({"model":"m","prompt":["a","b"]})");
  ASSERT_TRUE(legacy.complete);
  EXPECT_EQ(json::parse(legacy.body).as_object().at("object").as_string(), "text_completion");
  EXPECT_EQ(stats().streams_started, 0u) << "non-stream responses are not streams";
}

TEST_F(sim_fixture, IdenticalRequestsGiveIdenticalBytes) {
  start();
  client a(port), b(port);
  auto r1 = a.chat({{"x-sim-tokens", "20"}});
  auto r2 = b.chat({{"x-sim-tokens", "20"}});
  ASSERT_TRUE(r1.complete && r2.complete);
  EXPECT_EQ(r1.body, r2.body);
  EXPECT_EQ(r1.headers["x-request-id"], r2.headers["x-request-id"]);
  auto r3 = a.chat({{"x-sim-tokens", "20"}}, R"({"model":"sim-1","stream":true,"messages":[{"role":"user","content":"other"}]})");
  EXPECT_NE(r1.body, r3.body);
}

TEST_F(sim_fixture, ModelsStatsAndErrors) {
  sim::options o;
  o.models = {"alpha", "beta"};
  start(o);
  client c(port);
  auto models = c.send(http::verb::get, "/v1/models");
  ASSERT_EQ(models.status, 200u);
  auto list = json::parse(models.body).as_object();
  EXPECT_EQ(list.at("object").as_string(), "list");
  ASSERT_EQ(list.at("data").as_array().size(), 2u);
  EXPECT_EQ(list.at("data").as_array()[0].as_object().at("id").as_string(), "alpha");

  auto missing = c.send(http::verb::get, "/v1/nothing");
  EXPECT_EQ(missing.status, 404u);
  EXPECT_EQ(error_of(missing).at("type").as_string(), "invalid_request_error");

  auto bad = c.chat({}, "{\"model\": ");
  EXPECT_EQ(bad.status, 400u);
  EXPECT_EQ(error_of(bad).at("type").as_string(), "invalid_request_error");

  auto no_model = c.chat({}, R"({"messages":[{"role":"user","content":"x"}]})");
  EXPECT_EQ(no_model.status, 400u);
  EXPECT_EQ(error_of(no_model).at("param").as_string(), "model");

  auto bad_header = c.chat({{"x-sim-ttft", "soon"}});
  EXPECT_EQ(bad_header.status, 400u);

  auto wrong_method = c.send(http::verb::get, "/v1/chat/completions");
  EXPECT_EQ(wrong_method.status, 405u);

  auto st = c.send(http::verb::get, "/sim/stats", {}, {{"authorization", "Bearer sk-secret"}});
  ASSERT_EQ(st.status, 200u);
  EXPECT_EQ(st.body.find("sk-secret"), std::string::npos);
  auto sv = json::parse(st.body).as_object();
  EXPECT_EQ(sv.at("requests").as_int64(), 7);  // this one included
  EXPECT_EQ(sv.at("requests_with_auth").as_int64(), 1);
  EXPECT_EQ(sv.at("responses_4xx").as_int64(), 5);
  EXPECT_EQ(sv.at("connections_accepted").as_int64(), 1);
}

TEST_F(sim_fixture, Fault5xx) {
  sim::options o;
  o.fault_5xx_rate = 1;
  start(o);
  client c(port);
  auto r = c.chat();
  EXPECT_EQ(r.status, 500u);
  EXPECT_EQ(error_of(r).at("type").as_string(), "server_error");
  // Pinned by header on a server without rates, and a forced status.
  auto pinned = c.chat({{"x-sim-fault", "none"}});
  EXPECT_EQ(pinned.status, 200u);
  auto forced = c.chat({{"x-sim-status", "503"}});
  EXPECT_EQ(forced.status, 503u);
  EXPECT_EQ(error_of(forced).at("type").as_string(), "server_error");
  auto s = stats();
  EXPECT_EQ(s.responses_5xx, 2u);
  EXPECT_EQ(s.streams_started, 1u) << "status faults are answered before any stream starts";
}

TEST_F(sim_fixture, Fault429CarriesRateLimitHeaders) {
  start();
  client c(port);
  auto r = c.chat({{"x-sim-fault", "429"}, {"x-sim-retry-after", "1500ms"}});
  ASSERT_EQ(r.status, 429u);
  EXPECT_EQ(r.headers["retry-after"], "2");
  EXPECT_EQ(r.headers["retry-after-ms"], "1500");
  EXPECT_EQ(r.headers["x-ratelimit-limit-requests"], "500");
  EXPECT_EQ(r.headers["x-ratelimit-remaining-requests"], "0");
  EXPECT_EQ(r.headers["x-ratelimit-reset-requests"], "1.5s");
  EXPECT_FALSE(r.headers["x-ratelimit-limit-tokens"].empty());
  EXPECT_EQ(r.headers["x-ratelimit-remaining-tokens"], "0");
  EXPECT_EQ(r.headers["x-ratelimit-reset-tokens"], "1.5s");
  EXPECT_EQ(error_of(r).at("code").as_string(), "rate_limit_exceeded");
  // The connection stays usable after an error.
  EXPECT_EQ(c.chat().status, 200u);
  auto s = stats();
  EXPECT_EQ(s.responses_429, 1u);
  EXPECT_EQ(s.responses_4xx, 1u);
  EXPECT_EQ(s.connections_accepted, 1u);
}

TEST_F(sim_fixture, Fault429FromRate) {
  sim::options o;
  o.fault_429_rate = 1;
  o.retry_after = 360s;
  start(o);
  client c(port);
  auto r = c.chat();
  ASSERT_EQ(r.status, 429u);
  EXPECT_EQ(r.headers["retry-after"], "360");
  EXPECT_EQ(r.headers["x-ratelimit-reset-requests"], "6m0s");
}

TEST_F(sim_fixture, ResetAfterK) {
  start();
  client c(port);
  auto r = c.chat({{"x-sim-fault", "reset"}, {"x-sim-fault-after", "3"}, {"x-sim-tokens", "10"}});
  EXPECT_EQ(r.status, 200u);
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(r.ec, net::error::connection_reset) << r.ec.message();
  EXPECT_EQ(count_events(r.body), 1u + 3u) << "role chunk and exactly K tokens before the reset";
  auto s = stats();
  EXPECT_EQ(s.streams_completed, 0u);
  EXPECT_EQ(s.streams_aborted, 0u) << "the simulator, not the client, ended it";
  EXPECT_EQ(s.faults_injected, 1u);
  EXPECT_TRUE(eventually([&] { return stats().active_streams == 0; }));
}

TEST_F(sim_fixture, StallAfterKThenClientLeaves) {
  sim::options o;
  o.stall_after = 2;  // configured by option this time
  start(o);
  client c(port);
  // Waits for one event more than a stall lets through; the deadline ends the read.
  auto r = c.chat({{"x-sim-tokens", "10"}}, chat_stream_body, 1 + 2 + 1, 300ms);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(count_events(r.body), 1u + 2u);
  // send() closed the socket at the deadline: the stall must notice at once.
  auto closed_at = clock_type::now();
  EXPECT_TRUE(eventually([&] { return stats().streams_aborted == 1; }, prompt_notice))
      << "noticed after " << std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - closed_at).count()
      << "ms";
  EXPECT_EQ(stats().streams_completed, 0u);
  EXPECT_TRUE(eventually([&] { return stats().active_streams == 0 && stats().active_connections == 0; }));
}

TEST_F(sim_fixture, MalformedAfterK) {
  start();
  client c(port);
  auto r = c.chat({{"x-sim-fault", "malformed"}, {"x-sim-fault-after", "2"}, {"x-sim-tokens", "4"}});
  ASSERT_TRUE(r.complete);
  auto ev = event_data(r.body);
  ASSERT_EQ(ev.size(), 1u + 4u + 1u + 1u + 1u);
  std::vector<std::size_t> bad;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    error_code ec;
    (void)json::parse(ev[i], ec);
    if (ec && ev[i] != "[DONE]") bad.push_back(i);
  }
  EXPECT_EQ(bad, std::vector<std::size_t>{1 + 2}) << "one malformed event, right after K tokens";
  EXPECT_EQ(ev.back(), "[DONE]");
}

TEST_F(sim_fixture, ClientLeavingMidStreamIsNoticedPromptly) {
  start();
  client c(port);
  auto r = c.chat({{"x-sim-tokens", "1000"}, {"x-sim-token-delay", "20ms"}}, chat_stream_body, 3);
  ASSERT_FALSE(r.complete);
  ASSERT_GE(count_events(r.body), 3u);
  EXPECT_EQ(stats().active_streams, 1u);
  c.close();
  auto closed_at = clock_type::now();
  EXPECT_TRUE(eventually([&] { return stats().streams_aborted == 1; }, prompt_notice))
      << "noticed after " << std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - closed_at).count()
      << "ms";
  EXPECT_TRUE(eventually([&] { return stats().active_streams == 0; }));
}

TEST_F(sim_fixture, ClientLeavingDuringHeaderDelayIsNoticedPromptly) {
  start();
  client c(port);
  c.write_only(chat_stream_body, {{"x-sim-header-delay", "30s"}, {"content-type", "application/json"}});
  ASSERT_TRUE(eventually([&] { return stats().active_streams == 1; }));
  c.close();
  auto closed_at = clock_type::now();
  EXPECT_TRUE(eventually([&] { return stats().streams_aborted == 1; }, prompt_notice))
      << "noticed after " << std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - closed_at).count()
      << "ms";
  EXPECT_EQ(stats().responses_2xx, 0u) << "no headers were sent";
}

TEST_F(sim_fixture, ClientLeavingDuringTtftIsNoticedPromptly) {
  start();
  client c(port);
  c.write_only(chat_stream_body, {{"x-sim-ttft", "30s"}, {"content-type", "application/json"}});
  ASSERT_TRUE(eventually([&] { return stats().responses_2xx == 1; }));
  c.close();
  EXPECT_TRUE(eventually([&] { return stats().streams_aborted == 1; }, prompt_notice));
}

TEST_F(sim_fixture, KeepAliveReusesOneConnection) {
  start();
  client c(port);
  for (int i = 0; i < 3; ++i) {
    auto r = c.chat({{"authorization", "Bearer sk-test"}});
    ASSERT_TRUE(r.complete);
    ASSERT_EQ(r.status, 200u);
  }
  auto r = c.chat({}, R"({"model":"sim-1","messages":[{"role":"user","content":"x"}]})");
  ASSERT_TRUE(r.complete);
  auto s = stats();
  EXPECT_EQ(s.connections_accepted, 1u);
  EXPECT_EQ(s.requests, 4u);
  EXPECT_EQ(s.requests_with_auth, 3u);
  EXPECT_EQ(s.streams_completed, 3u);
  EXPECT_EQ(s.active_connections, 1u);
}

TEST_F(sim_fixture, StopClosesStalledStreams) {
  start();
  client c(port);
  c.write_only(chat_stream_body, {{"x-sim-fault", "stall"}, {"content-type", "application/json"}});
  ASSERT_TRUE(eventually([&] { return stats().active_streams == 1; }));
  server->stop();  // must return although a stream is stalled
  server->stop();  // idempotent
  EXPECT_EQ(stats().active_streams, 0u);
  EXPECT_EQ(stats().active_connections, 0u);
}

namespace {

// One of many concurrent streams: connect, request, read to the end, count a [DONE].
task<void> one_stream(std::uint16_t port, int* done, int* failed) {
  auto ex = co_await net::this_coro::executor;
  tcp::socket s(ex);
  boost::beast::flat_buffer buf;
  error_code ec;
  co_await s.async_connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port), ec_out(ec));
  if (ec) {
    ++*failed;
    co_return;
  }
  reply out;
  http::request<http::string_body> req{http::verb::post, "/v1/chat/completions", 11};
  req.set(http::field::host, "127.0.0.1");
  // Long enough (~400ms) that the streams overlap even when connecting them all takes a while.
  req.set("x-sim-tokens", "20");
  req.set("x-sim-token-delay", "20ms");
  req.body() = chat_stream_body;
  co_await do_exchange(&s, &buf, std::move(req), 0, &out);
  auto tail = std::string_view(out.body).substr(out.body.size() >= 14 ? out.body.size() - 14 : 0);
  if (out.complete && tail == "data: [DONE]\n\n") ++*done;
  else ++*failed;
}

}  // namespace

TEST_F(sim_fixture, TwoThousandConcurrentStreams) {
  runtime::raise_fd_limit();
  start();
  constexpr int n = 2000;
  net::io_context ioc(1);
  int done = 0, failed = 0;
  for (int i = 0; i < n; ++i) net::co_spawn(ioc, one_stream(port, &done, &failed), net::detached);
  std::size_t peak_active = 0;
  // Runs the clients while sampling how many streams the simulator holds at once.
  auto deadline = clock_type::now() + 60s;
  while (!ioc.stopped() && clock_type::now() < deadline) {
    ioc.run_for(5ms);
    peak_active = std::max<std::size_t>(peak_active, stats().active_streams);
  }
  EXPECT_EQ(done, n);
  EXPECT_EQ(failed, 0);
  EXPECT_TRUE(ioc.stopped()) << "the clients did not finish within the deadline";
  auto s = stats();
  EXPECT_EQ(s.streams_completed, static_cast<std::uint64_t>(n));
  EXPECT_EQ(s.streams_aborted, 0u);
  EXPECT_GT(peak_active, static_cast<std::size_t>(n / 2)) << "the streams overlapped";
  std::printf("[ sim ] %d concurrent streams, peak active %zu, rss %.1f MiB\n", n, peak_active,
              static_cast<double>(runtime::read_rss_bytes()) / (1024.0 * 1024.0));
}

#ifdef SLUICE_BINARY
// The CLI prints the bound address for scripts and stops cleanly on SIGTERM.
TEST(SimCli, PrintsListeningAddressAndServes) {
  std::string cmd = std::string(SLUICE_BINARY) + " sim --listen 127.0.0.1:0 --tokens 3 & echo pid=$!";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char line[256];
  int pid = 0;
  std::uint16_t port = 0;
  while ((pid == 0 || port == 0) && std::fgets(line, sizeof line, p)) {
    std::string l(line);
    if (l.rfind("pid=", 0) == 0) pid = std::stoi(l.substr(4));
    auto at = l.find("sluice sim listening on 127.0.0.1:");
    if (at == 0) port = static_cast<std::uint16_t>(std::stoi(l.substr(34)));
  }
  ASSERT_GT(pid, 0);
  ASSERT_GT(port, 0);
  {
    client c(port);
    auto r = c.chat();
    EXPECT_TRUE(r.complete);
    EXPECT_EQ(event_data(r.body).size(), 1u + 3u + 1u + 1u);
  }
  kill(pid, SIGTERM);
  pclose(p);
}
#endif
