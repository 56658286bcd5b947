// Every way a request can end, driven through the real binary: a stream and a whole answer, the
// HTTP-level refusals (malformed, 408, 413, 431), validation (malformed JSON, a wrong field, 404,
// 405), the client-key limits (401, 429 by rpm and by concurrency), admission (503 queue full, 503
// memory, 503 draining), the upstream's failures (502 after its attempts, 503 no healthy upstream,
// 504, the schema 502) and a client that leaves mid-stream. Each must write exactly one log line
// carrying the client's x-request-id, the status, outcome and reason, and move
// sluice_requests_total exactly once, with the same route and outcome.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include <boost/json/parse.hpp>

#include "process.hpp"
#include "sim/server.hpp"
#include "test_client.hpp"

using namespace sluice;
using namespace std::chrono_literals;
using test::bhttp::verb;

namespace {

using labels = std::pair<std::string, std::string>;  // route, outcome

// A gateway process and what it logs.
struct gateway_proc {
  test::child_process p;
  std::uint16_t port = 0;
  explicit gateway_proc(std::vector<std::string> args) : p(std::move(args), {"OPENAI_API_KEY=sk-upstream-test"}) {
    auto got = p.wait_port();
    EXPECT_TRUE(got.has_value()) << p.output();
    port = got.value_or(0);
  }

  // sluice_requests_total by (route, outcome), leaving out route="metrics": the scrapes themselves.
  std::map<labels, double> requests() { return parse_requests(test::call(port, verb::get, "/metrics").body()); }
  static std::map<labels, double> parse_requests(const std::string& text) {
    std::map<labels, double> out;
    std::size_t at = 0;
    static const std::string name = "sluice_requests_total{";
    while ((at = text.find("\n" + name, at)) != std::string::npos) {
      at += 1 + name.size();
      const auto close = text.find('}', at);
      const std::string lbl = text.substr(at, close - at);
      auto value_of = [&](const std::string& key) {
        const auto k = lbl.find(key + "=\"");
        if (k == std::string::npos) return std::string();
        const auto b = k + key.size() + 2;
        return lbl.substr(b, lbl.find('"', b) - b);
      };
      const double v = std::stod(text.substr(close + 2));
      if (value_of("route") != "metrics") out[{value_of("route"), value_of("outcome")}] = v;
      at = close;
    }
    return out;
  }

  // The log lines that carry `id`, waiting for at least one to appear.
  std::vector<boost::json::object> records(const std::string& id) {
    std::vector<boost::json::object> out;
    const std::string needle = "\"request_id\":\"" + id + "\"";
    test::wait_until(
        [&] {
          p.pump(5);
          return p.output().find(needle) != std::string::npos;
        },
        5s);
    p.pump(50);  // a second line would have been written by now
    std::size_t start = 0;
    const std::string& all = p.output();
    while (start < all.size()) {
      auto end = all.find('\n', start);
      if (end == std::string::npos) end = all.size();
      const std::string line = all.substr(start, end - start);
      if (line.find(needle) != std::string::npos) out.push_back(boost::json::parse(line).as_object());
      start = end + 1;
    }
    return out;
  }
};

// GET /metrics on a kept-alive connection (which outlives the listener when the drain closes it).
std::string scrape_on(test::client_socket& c) {
  c.send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  boost::beast::flat_buffer buf;
  test::bhttp::response_parser<test::bhttp::string_body> parser;
  parser.body_limit(16 * 1024 * 1024);
  boost::system::error_code ec;
  test::bhttp::read(c.sock, buf, parser, ec);
  EXPECT_FALSE(ec) << ec.message();
  return parser.get().body();
}

struct ending {
  std::string id;
  int status;
  std::string route;
  std::string outcome;
  std::string reason;
  std::string msg;  // stream completed / request completed / request refused
};

// Checks what one finished request left behind, against the requests counter read before it.
// What one request's line says.
void expect_line(const boost::json::object& rec, const ending& want) {
  EXPECT_EQ(rec.at("msg").as_string(), want.msg);
  EXPECT_EQ(rec.at("status").to_number<int>(), want.status);
  EXPECT_EQ(rec.at("route").as_string(), want.route);
  EXPECT_EQ(rec.at("outcome").as_string(), want.outcome);
  EXPECT_EQ(rec.at("reason").as_string(), want.reason);
}

// Exactly one sample more, with these labels.
void expect_counted_once(const std::map<labels, double>& before, std::map<labels, double> after, const ending& want) {
  double moved = 0;
  std::string moves;
  for (const auto& [k, v] : after) {
    const double d = v - (before.count(k) ? before.at(k) : 0.0);
    moved += d;
    if (d != 0) moves += " " + k.first + "/" + k.second + "+" + std::to_string(d);
  }
  EXPECT_EQ(moved, 1.0) << "sluice_requests_total moves exactly once; moved:" << moves;
  const labels key{want.route, want.outcome};
  EXPECT_EQ(after[key] - (before.count(key) ? before.at(key) : 0.0), 1.0) << "with the log line's route and outcome";
}

void expect_one_record(gateway_proc& g, const std::map<labels, double>& before, const ending& want) {
  SCOPED_TRACE("request " + want.id);
  const auto lines = g.records(want.id);
  ASSERT_EQ(lines.size(), 1u) << "exactly one log line per request";
  expect_line(lines[0], want);

  std::map<labels, double> after;
  // The counter is bumped right after the line is written; give a loaded machine a moment.
  test::wait_until(
      [&] {
        after = g.requests();
        double moved = 0;
        for (const auto& [k, v] : after) moved += v - (before.count(k) ? before.at(k) : 0.0);
        return moved >= 1;
      },
      2s);
  expect_counted_once(before, after, want);
}

std::string raw_exchange(std::uint16_t port, const std::string& raw) {
  test::client_socket c(port);
  c.send(raw);
  return c.read_all();
}

std::string chat_request(const std::string& id, bool stream, const std::string& key,
                         const std::string& extra_headers = "", const std::string& body_extra = "") {
  const std::string body = test::chat_body(stream, body_extra);
  return "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nx-request-id: " + id +
         "\r\nAuthorization: Bearer " + key + "\r\n" + extra_headers + "Content-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

struct request_endings : ::testing::Test {
  std::unique_ptr<sim::server> sim;
  void SetUp() override {
    sim::options so;
    so.listen = "127.0.0.1:0";
    so.tokens = 4;
    so.token_delay = 1ms;
    sim = std::make_unique<sim::server>(so);
    ASSERT_TRUE(sim->start().has_value());
  }
  std::string upstream() const { return "http://127.0.0.1:" + std::to_string(sim->port()); }
};

// A request that holds its upstream stream open until `close()`, for the limits that need one.
struct held_stream {
  test::client_socket c;
  held_stream(std::uint16_t port, const std::string& id, const std::string& key) : c(port) {
    c.send(chat_request(id, true, key, "x-sim-tokens: 200\r\nx-sim-token-delay: 50ms\r\n"));
    std::string got;
    char buf[4096];
    boost::system::error_code ec;
    while (got.find("\"content\"") == std::string::npos && !ec) got.append(buf, c.sock.read_some(test::net::buffer(buf), ec));
  }
};

}  // namespace

TEST_F(request_endings, EveryEndingWritesOneLineAndOneCount) {
  const std::string keys = test::temp_file_with("sk-good 100 0 good\nsk-rpm1 0 1 rpm1\nsk-one 1 0 one\n");
  gateway_proc g({"serve", "--listen", "127.0.0.1:0", "--threads", "2", "--upstream", upstream(), "--keys-file", keys,
                  "--max-streams", "2", "--queue-depth", "0", "--max-body-bytes", "4KiB", "--max-header-bytes", "2KiB",
                  "--header-timeout", "400ms", "--upstream-first-byte-timeout", "300ms", "--max-attempts", "1",
                  "--log-format", "json"});
  ASSERT_NE(g.port, 0);
  const std::string good = "Bearer sk-good";
  auto check = [&](const ending& want, const std::function<void()>& send) {
    const auto before = g.requests();
    send();
    expect_one_record(g, before, want);
  };

  check({"end-stream", 200, "chat_completions", "ok", "", "stream completed"}, [&] {
    auto r = test::post_chat(g.port, true, {{"Authorization", good}, {"x-request-id", "end-stream"}});
    EXPECT_EQ(r.result_int(), 200u);
  });
  check({"end-whole", 200, "chat_completions", "ok", "", "request completed"}, [&] {
    auto r = test::post_chat(g.port, false, {{"Authorization", good}, {"x-request-id", "end-whole"}});
    EXPECT_EQ(r.result_int(), 200u);
  });
  check({"end-400-http", 400, "other", "client_error", "bad_request", "request refused"}, [&] {
    auto raw = raw_exchange(g.port, "GET /v1/models HTTP/1.1\r\nHost: x\r\nx-request-id: end-400-http\r\nBad Header\r\n\r\n");
    EXPECT_EQ(raw.substr(0, 12), "HTTP/1.1 400");
  });
  check({"end-400-json", 400, "chat_completions", "client_error", "bad_request", "request refused"}, [&] {
    auto r = test::call(g.port, verb::post, "/v1/chat/completions", "{bad",
                        {{"Authorization", good}, {"x-request-id", "end-400-json"}});
    EXPECT_EQ(r.result_int(), 400u);
  });
  check({"end-400-field", 400, "chat_completions", "client_error", "bad_request", "request refused"}, [&] {
    auto r = test::call(g.port, verb::post, "/v1/chat/completions", R"({"model":"m","messages":"no"})",
                        {{"Authorization", good}, {"x-request-id", "end-400-field"}});
    EXPECT_EQ(r.result_int(), 400u);
    EXPECT_NE(r.body().find("\"param\":\"messages\""), std::string::npos) << r.body();
  });
  check({"end-401", 401, "chat_completions", "rejected", "unauthorized", "request refused"}, [&] {
    auto r = test::post_chat(g.port, false, {{"Authorization", "Bearer sk-nope"}, {"x-request-id", "end-401"}});
    EXPECT_EQ(r.result_int(), 401u);
  });
  check({"end-404", 404, "other", "client_error", "not_found", "request refused"}, [&] {
    EXPECT_EQ(test::call(g.port, verb::get, "/v1/nope", "", {{"x-request-id", "end-404"}}).result_int(), 404u);
  });
  check({"end-405", 405, "chat_completions", "client_error", "method_not_allowed", "request refused"}, [&] {
    // (GET lists stored chat completions: a route of its own, ADR 0027; PUT is none.)
    EXPECT_EQ(test::call(g.port, verb::put, "/v1/chat/completions", "", {{"x-request-id", "end-405"}}).result_int(), 405u);
  });
  check({"end-408", 408, "other", "client_error", "header_timeout", "request refused"}, [&] {
    auto raw = raw_exchange(g.port, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nx-request-id: end-408\r\n");
    EXPECT_EQ(raw.substr(0, 12), "HTTP/1.1 408");
  });
  check({"end-413", 413, "other", "client_error", "too_large", "request refused"}, [&] {
    auto raw = raw_exchange(g.port, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nx-request-id: end-413\r\n"
                                    "Content-Length: 10000\r\n\r\n" + std::string(10000, 'x'));
    EXPECT_EQ(raw.substr(0, 12), "HTTP/1.1 413");
  });
  check({"end-431", 431, "other", "client_error", "too_large", "request refused"}, [&] {
    auto raw = raw_exchange(g.port, "GET /v1/models HTTP/1.1\r\nx-request-id: end-431\r\nX-Big: " + std::string(4000, 'b') +
                                        "\r\n\r\n");
    EXPECT_EQ(raw.substr(0, 12), "HTTP/1.1 431");
  });
  // rpm 1: the key's first request goes, the second is refused.
  // Checked like the others, so that its count has landed before the refused one's is read (the
  // counter moves just after the answer is written; a bare call raced it under CI's load).
  check({"end-rpm-first", 200, "chat_completions", "ok", "", "request completed"}, [&] {
    auto r = test::post_chat(g.port, false, {{"Authorization", "Bearer sk-rpm1"}, {"x-request-id", "end-rpm-first"}});
    EXPECT_EQ(r.result_int(), 200u);
  });
  check({"end-429-rpm", 429, "chat_completions", "rejected", "rate_limit", "request refused"}, [&] {
    auto r = test::post_chat(g.port, false, {{"Authorization", "Bearer sk-rpm1"}, {"x-request-id", "end-429-rpm"}});
    EXPECT_EQ(r.result_int(), 429u);
    EXPECT_FALSE(r[test::bhttp::field::retry_after].empty());
  });
  {
    held_stream one(g.port, "end-held-one", "sk-one");
    check({"end-429-streams", 429, "chat_completions", "rejected", "rate_limit", "request refused"}, [&] {
      auto r = test::post_chat(g.port, false, {{"Authorization", "Bearer sk-one"}, {"x-request-id", "end-429-streams"}});
      EXPECT_EQ(r.result_int(), 429u);
    });
    held_stream two(g.port, "end-held-two", "sk-good");  // max-streams 2 now taken
    check({"end-503-queue", 503, "chat_completions", "rejected", "queue_full", "request refused"}, [&] {
      auto r = test::post_chat(g.port, false, {{"Authorization", good}, {"x-request-id", "end-503-queue"}});
      EXPECT_EQ(r.result_int(), 503u);
    });
    // The client that leaves mid-stream: its upstream is closed, its line says so.
    const auto before = g.requests();
    one.c.close();
    expect_one_record(g, before, {"end-held-one", 200, "chat_completions", "cancelled", "client_gone", "stream completed"});
    const auto before_two = g.requests();
    two.c.close();
    expect_one_record(g, before_two, {"end-held-two", 200, "chat_completions", "cancelled", "client_gone", "stream completed"});
  }
  check({"end-502-schema", 502, "chat_completions", "upstream_error", "schema_violation", "request completed"}, [&] {
    const std::string body = test::chat_body(
        false, R"(,"response_format":{"type":"json_schema","json_schema":{"name":"s","schema":{"type":"object"}}})");
    auto r = test::call(g.port, verb::post, "/v1/chat/completions", body,
                        {{"Authorization", good}, {"x-request-id", "end-502-schema"},
                         {"x-sluice-schema-policy", "reject"}, {"x-sim-content", "not json"}});
    EXPECT_EQ(r.result_int(), 502u) << r.body();
  });
  check({"end-504", 504, "chat_completions", "timeout", "upstream_timeout", "request completed"}, [&] {
    auto r = test::post_chat(g.port, false, {{"Authorization", good}, {"x-request-id", "end-504"},
                                            {"x-sim-header-delay", "3s"}});
    EXPECT_EQ(r.result_int(), 504u) << r.body();
  });
  EXPECT_EQ(g.p.signal_and_wait(SIGKILL), -1);
  std::remove(keys.c_str());
}

// An upstream that refuses connections: the first request fails after its attempts (502) and opens
// the circuit; the next finds no healthy upstream (503) without trying.
TEST_F(request_endings, UpstreamFailuresWriteOneLineAndOneCount) {
  const std::string dead = upstream();  // a port surely closed: the simulator's, once it is stopped
  sim->stop();
  gateway_proc g({"serve", "--listen", "127.0.0.1:0", "--threads", "1", "--upstream", dead, "--circuit-failures", "1",
                  "--max-attempts", "2", "--log-format", "json"});
  ASSERT_NE(g.port, 0);
  auto before = g.requests();
  auto r = test::post_chat(g.port, false, {{"x-request-id", "end-502-upstream"}});
  EXPECT_EQ(r.result_int(), 502u) << r.body();
  expect_one_record(g, before, {"end-502-upstream", 502, "chat_completions", "upstream_error", "upstream_connect", "request completed"});
  before = g.requests();
  r = test::post_chat(g.port, false, {{"x-request-id", "end-503-unhealthy"}});
  EXPECT_EQ(r.result_int(), 503u) << r.body();
  EXPECT_NE(r.body().find("No healthy upstream"), std::string::npos) << r.body();
  expect_one_record(g, before, {"end-503-unhealthy", 503, "chat_completions", "upstream_error", "overloaded", "request refused"});
}

// A memory budget the process is already over: every request is shed (503, memory).
TEST_F(request_endings, MemoryShedWritesOneLineAndOneCount) {
  gateway_proc g({"serve", "--listen", "127.0.0.1:0", "--threads", "1", "--upstream", upstream(), "--memory-limit",
                  "4MiB", "--memory-sample-interval", "50ms", "--log-format", "json"});
  ASSERT_NE(g.port, 0);
  const auto before = g.requests();
  auto r = test::post_chat(g.port, false, {{"x-request-id", "end-503-memory"}});
  EXPECT_EQ(r.result_int(), 503u) << r.body();
  expect_one_record(g, before, {"end-503-memory", 503, "chat_completions", "rejected", "memory", "request refused"});
}

// SIGTERM while a request waits in the queue behind a stream: the waiting one is refused (503,
// draining); the stream finishes.
TEST_F(request_endings, DrainingWritesOneLineAndOneCount) {
  gateway_proc g({"serve", "--listen", "127.0.0.1:0", "--threads", "1", "--upstream", upstream(), "--max-streams", "1",
                  "--queue-depth", "4", "--queue-timeout", "20s", "--drain-delay", "0s", "--drain-timeout", "20s",
                  "--log-format", "json"});
  ASSERT_NE(g.port, 0);
  test::client_socket stream(g.port);
  stream.send(chat_request("end-drain-stream", true, "x", "x-sim-tokens: 20\r\nx-sim-token-delay: 50ms\r\n"));
  test::client_socket scraper(g.port);  // kept alive through the drain, which closes the listener
  std::optional<test::bhttp::response<test::bhttp::string_body>> queued;
  std::thread waiter([&] { queued = test::post_chat(g.port, false, {{"x-request-id", "end-503-draining"}}); });
  ASSERT_LT(test::wait_until([&] { return scrape_on(scraper).find("\nsluice_queue_depth 1") != std::string::npos; }), 5s);
  const auto before = gateway_proc::parse_requests(scrape_on(scraper));
  ::kill(g.p.pid(), SIGTERM);
  waiter.join();
  ASSERT_TRUE(queued.has_value());
  EXPECT_EQ(queued->result_int(), 503u) << queued->body();
  const ending want{"end-503-draining", 503, "chat_completions", "rejected", "draining", "request refused"};
  const auto lines = g.records(want.id);
  ASSERT_EQ(lines.size(), 1u);
  expect_line(lines[0], want);
  expect_counted_once(before, gateway_proc::parse_requests(scrape_on(scraper)), want);
  const std::string rest = stream.read_all();
  EXPECT_NE(rest.find("[DONE]"), std::string::npos) << "the running stream finishes";
  EXPECT_EQ(g.p.signal_and_wait(SIGTERM, 20s), 0);
  EXPECT_EQ(g.records("end-drain-stream").size(), 1u);
}
