// Upstream resilience against the simulator's fault injection, each case with its own simulators
// and gateway on 127.0.0.1: failover from a refused upstream, first-byte and total deadlines, the
// idle timeout mid-stream, a 429 burst absorbed, a circuit that opens and closes, pacing to a known
// upstream rate limit with no 429 provoked, holding requests while an engine reports saturation,
// routing by model, and the usage chunk asked for and stripped again.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <future>
#include <thread>

#include <boost/json/parse.hpp>

#include "app/gateway.hpp"
#include "sim/server.hpp"
#include "boxes.hpp"
#include "process.hpp"
#include "test_client.hpp"

using namespace sluice;
using namespace std::chrono_literals;
using test::bhttp::verb;

namespace {

using clock_type = std::chrono::steady_clock;

using test::gateway_box;
using test::sim_box;

sim::options sim_options(std::vector<std::string> models = {"sim-1"}) {
  sim::options o;
  o.listen = "127.0.0.1:0";
  o.tokens = 8;
  o.models = std::move(models);
  return o;
}

routing::upstream_spec upstream_at(std::string name, std::string url, std::uint64_t weight = 1) {
  routing::upstream_spec s;
  s.name = std::move(name);
  s.url = std::move(url);
  s.weight = weight;
  return s;
}

app::serve_options gateway_options(std::vector<routing::upstream_spec> ups) {
  app::serve_options go;
  go.http.listen = "127.0.0.1:0";
  go.http.threads = 2;
  go.routing.upstreams = std::move(ups);
  go.routing.backoff_base = 20ms;
  go.routing.backoff_cap = 100ms;
  return go;
}

double seconds_since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

std::string header(const test::bhttp::response<test::bhttp::string_body>& r, std::string_view name) {
  return std::string(r[name]);
}

// The value of one sample line of /metrics ("name{labels} value"), or -1.
double metric(std::uint16_t port, std::string_view line_prefix) {
  auto res = test::call(port, verb::get, "/metrics");
  const std::string& body = res.body();
  auto at = body.find(std::string("\n") + std::string(line_prefix) + " ");
  if (at == std::string::npos) return -1;
  at += line_prefix.size() + 2;
  return std::stod(body.substr(at, body.find('\n', at) - at));
}

}  // namespace

TEST(Resilience, RefusedUpstreamFailsOverToTheNext) {
  sim_box good(sim_options());
  test::refused_port dead;
  // The dead one weighs a million times more, so it is picked first.
  auto go = gateway_options({upstream_at("dead", dead.url(), 1000000),
                             upstream_at("good", good.url())});
  gateway_box g(go);
  auto res = test::post_chat(g.port, false);
  ASSERT_EQ(res.result_int(), 200u) << res.body();
  EXPECT_EQ(header(res, "x-sluice-attempts"), "2");
  EXPECT_EQ(header(res, "x-sluice-upstream"), "good");
  auto stream = test::post_chat(g.port, true);
  ASSERT_EQ(stream.result_int(), 200u);
  EXPECT_NE(stream.body().find("data: [DONE]"), std::string::npos);
  EXPECT_EQ(header(stream, "x-sluice-upstream"), "good");
  EXPECT_GE(metric(g.port, R"(sluice_upstream_retries_total{upstream="dead",reason="connect"})"), 1);
}

TEST(Resilience, StallBeforeHeadersGives504AtTheFirstByteTimeout) {
  auto so = sim_options();
  so.header_delay = 10s;
  sim_box stalled(so);
  auto go = gateway_options({upstream_at("stalled", stalled.url())});
  go.upstream.first_byte_timeout = 1s;
  go.routing.max_attempts = 1;
  gateway_box g(go);
  auto t0 = clock_type::now();
  auto res = test::post_chat(g.port, true);
  double took = seconds_since(t0);
  EXPECT_EQ(res.result_int(), 504u) << res.body();
  EXPECT_NE(res.body().find("upstream_timeout"), std::string::npos);
  EXPECT_EQ(header(res, "x-sluice-attempts"), "1");
  EXPECT_GE(took, 0.9);
  // Bounded by what a wrong gateway would give (the upstream's 10 s), not by a busy machine's
  // timer slack: a sanitizer build on 2 loaded cores has woken timers 700 ms late.
  EXPECT_LT(took, 5.0) << "at the first-byte timeout, not at the upstream's 10 s head";
}

TEST(Resilience, StallBeforeHeadersFailsOverInsideTheTotalDeadline) {
  auto so = sim_options();
  so.header_delay = 10s;
  sim_box stalled(so);
  sim_box good(sim_options());
  auto go = gateway_options({upstream_at("stalled", stalled.url(), 1000000), upstream_at("good", good.url())});
  go.upstream.first_byte_timeout = 300ms;
  go.routing.request_timeout = 3s;
  gateway_box g(go);
  auto t0 = clock_type::now();
  auto res = test::post_chat(g.port, true);
  double took = seconds_since(t0);
  ASSERT_EQ(res.result_int(), 200u) << res.body();
  EXPECT_EQ(header(res, "x-sluice-attempts"), "2");
  EXPECT_EQ(header(res, "x-sluice-upstream"), "good");
  EXPECT_GE(took, 0.27);
  EXPECT_LT(took, 3.0);
}

TEST(Resilience, TheTotalDeadlineBoundsEveryAttemptTogether) {
  auto so = sim_options();
  so.header_delay = 10s;
  sim_box stalled(so);
  auto go = gateway_options({upstream_at("stalled", stalled.url())});
  go.upstream.first_byte_timeout = 5s;  // alone it would allow 5 attempts x 5 s
  go.routing.max_attempts = 5;
  go.routing.request_timeout = 1s;
  gateway_box g(go);
  auto t0 = clock_type::now();
  auto res = test::post_chat(g.port, false);
  double took = seconds_since(t0);
  EXPECT_EQ(res.result_int(), 504u) << res.body();
  EXPECT_GE(took, 0.9);
  EXPECT_LT(took, 4.0) << "the total deadline, not 5 attempts of 5 s";
}

TEST(Resilience, StallMidStreamGivesAnInBandErrorAfterTheIdleTimeout) {
  sim_box s(sim_options());
  auto go = gateway_options({upstream_at("s", s.url())});
  go.upstream.idle_between_events = 500ms;
  gateway_box g(go);
  auto t0 = clock_type::now();
  auto res = test::post_chat(g.port, true, {{"x-sim-fault", "stall"}, {"x-sim-fault-after", "2"}});
  double took = seconds_since(t0);
  ASSERT_EQ(res.result_int(), 200u);
  EXPECT_EQ(header(res, "x-sluice-attempts"), "1") << "no retry once bytes went out";
  EXPECT_NE(res.body().find("upstream_timeout"), std::string::npos) << res.body();
  EXPECT_EQ(res.body().find("[DONE]"), std::string::npos);
  EXPECT_GE(took, 0.45);
  EXPECT_LT(took, 4.5) << "at the idle timeout; the upstream never ends this stall";
}

TEST(Resilience, A429BurstIsAbsorbedHonouringRetryAfter) {
  sim_box s(sim_options());
  ASSERT_TRUE(s.server.control(R"({"script":[{"fault":"429","retry_after":"300ms"},{"fault":"429","retry_after":"300ms"}]})")
                  .has_value());
  auto go = gateway_options({upstream_at("s", s.url())});
  go.routing.max_attempts = 4;
  gateway_box g(go);
  auto t0 = clock_type::now();
  auto res = test::post_chat(g.port, true);
  double took = seconds_since(t0);
  ASSERT_EQ(res.result_int(), 200u) << res.body();
  EXPECT_EQ(header(res, "x-sluice-attempts"), "3");
  EXPECT_NE(res.body().find("data: [DONE]"), std::string::npos);
  EXPECT_GE(took, 0.6) << "two retry-after waits of 300 ms";
  EXPECT_EQ(s.server.snapshot().responses_429, 2u);
  EXPECT_EQ(s.server.script_remaining(), 0u);
  EXPECT_GE(metric(g.port, R"(sluice_upstream_retries_total{upstream="s",reason="status_429"})"), 2);

  // More 429s than attempts: the last one goes to the client, with its Retry-After.
  ASSERT_TRUE(s.server.control(R"({"script":[{"fault":"429","retry_after":"50ms"},{"fault":"429","retry_after":"50ms"},)"
                               R"({"fault":"429","retry_after":"50ms"},{"fault":"429","retry_after":"50ms"}]})")
                  .has_value());
  auto res2 = test::post_chat(g.port, false);
  EXPECT_EQ(res2.result_int(), 429u);
  EXPECT_FALSE(res2[test::bhttp::field::retry_after].empty());
  EXPECT_EQ(header(res2, "x-sluice-attempts"), "4");
}

TEST(Resilience, CircuitOpensFailsFastAndClosesAfterAProbe) {
  sim_box s(sim_options());
  auto go = gateway_options({upstream_at("s", s.url())});
  go.routing.max_attempts = 1;
  go.routing.circuit_failures = 3;
  go.routing.circuit_open_time = 600ms;
  gateway_box g(go);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(test::post_chat(g.port, false, {{"x-sim-fault", "5xx"}}).result_int(), 500u);
  EXPECT_EQ(metric(g.port, R"(sluice_upstream_circuit_state{upstream="s"})"), 2);
  auto before = s.server.snapshot().requests;
  auto refused = test::post_chat(g.port, false);
  EXPECT_EQ(refused.result_int(), 503u) << refused.body();
  EXPECT_FALSE(refused[test::bhttp::field::retry_after].empty());
  EXPECT_EQ(s.server.snapshot().requests, before) << "an open circuit gets no traffic";
  auto ready = test::call(g.port, verb::get, "/readyz");
  EXPECT_EQ(ready.result_int(), 503u);
  EXPECT_NE(ready.body().find("no upstream usable"), std::string::npos);

  // Half-open once the open time has passed: the next request is the probe.
  ASSERT_LT(test::wait_until([&] { return metric(g.port, R"(sluice_upstream_circuit_state{upstream="s"})") == 1; }, 3s),
            3s);
  auto probe = test::post_chat(g.port, false);
  EXPECT_EQ(probe.result_int(), 200u) << probe.body();
  EXPECT_EQ(metric(g.port, R"(sluice_upstream_circuit_state{upstream="s"})"), 0);
  EXPECT_EQ(test::call(g.port, verb::get, "/readyz").result_int(), 200u);
  EXPECT_EQ(metric(g.port, R"(sluice_upstream_circuit_opens_total{upstream="s"})"), 1);
}

TEST(Resilience, PacesToAKnownUpstreamRateLimitWithoutProvoking429s) {
  constexpr int rpm = 30;
  auto so = sim_options();
  so.limit_rpm = rpm;
  sim_box s(so);
  auto u = upstream_at("limited", s.url());
  u.requests_per_minute = rpm;
  auto go = gateway_options({u});
  go.routing.max_hold = 2500ms;  // one 2 s refill fits: about one more request gets through
  go.admission.max_streams = 200;
  gateway_box g(go);

  constexpr int flood = 60;
  std::vector<std::future<unsigned>> results;
  for (int i = 0; i < flood; ++i)
    results.push_back(std::async(std::launch::async, [&] { return test::post_chat(g.port, false).result_int(); }));
  int ok = 0, shed = 0, other = 0;
  for (auto& f : results) {
    unsigned st = f.get();
    if (st == 200) ++ok;
    else if (st == 429) ++shed;
    else ++other;
  }
  auto snap = s.server.snapshot();
  EXPECT_EQ(snap.rate_limited, 0u) << "sluice never made the upstream refuse";
  EXPECT_EQ(snap.responses_429, 0u);
  EXPECT_EQ(other, 0);
  EXPECT_GE(ok, rpm);
  EXPECT_LE(ok, rpm + 2) << "one more per 2 s of refill";
  EXPECT_EQ(ok + shed, flood);
  EXPECT_GE(metric(g.port, R"(sluice_upstream_holds_total{reason="paced"})"), 1);
}

// An upstream of dialect: anthropic says its limits as Anthropic does (anthropic-ratelimit-*, each
// reset an RFC 3339 time): the gateway learns them from the answers (no limit configured) and holds
// or sheds the requests past them itself, so the upstream never has to refuse one.
TEST(Resilience, PacesToTheLimitsAnAnthropicUpstreamSaysWithoutProvoking429s) {
  constexpr int rpm = 4;
  auto so = sim_options();
  so.limit_rpm = rpm;
  sim_box s(so);
  auto u = upstream_at("claude", s.url());
  u.dialect = routing::upstream_dialect::anthropic;
  auto go = gateway_options({u});
  go.routing.max_attempts = 1;
  go.routing.max_hold = 200ms;  // a refill is 15 s away: shed at once rather than wait for it
  gateway_box g(go);
  int ok = 0, shed = 0;
  for (int i = 0; i < 3 * rpm; ++i) {
    const unsigned st = test::post_chat(g.port, false).result_int();
    ok += st == 200 ? 1 : 0;
    shed += st == 429 ? 1 : 0;
  }
  EXPECT_EQ(ok, rpm);
  EXPECT_EQ(shed, 2 * rpm) << "the gateway's own 429s";
  EXPECT_EQ(s.server.snapshot().rate_limited, 0u) << "the upstream never refused: its headers were heeded";
  EXPECT_EQ(s.server.snapshot().completion_requests, static_cast<std::uint64_t>(rpm));
}

TEST(Resilience, SaturatedEngineGetsNoNewRequestsUntilItRecovers) {
  sim_box s(sim_options());
  auto u = upstream_at("gpu", s.url());
  u.engine_metrics = s.url() + "/metrics";
  auto go = gateway_options({u});
  go.routing.engine_scrape_interval = 100ms;
  go.routing.max_hold = 10s;
  gateway_box g(go);
  ASSERT_EQ(test::post_chat(g.port, false).result_int(), 200u);

  ASSERT_TRUE(s.server.control(R"({"engine":{"waiting":5,"kv_cache_usage":0.5}})").has_value());
  test::wait_until([&] { return metric(g.port, R"(sluice_upstream_engine_saturated{upstream="gpu"})") == 1; }, 3s);
  ASSERT_EQ(metric(g.port, R"(sluice_upstream_engine_saturated{upstream="gpu"})"), 1);
  auto before = s.server.snapshot().completion_requests;
  auto t0 = clock_type::now();
  auto held = std::async(std::launch::async, [&] { return test::post_chat(g.port, true); });
  EXPECT_EQ(held.wait_for(800ms), std::future_status::timeout) << "held at the gateway";
  EXPECT_EQ(s.server.snapshot().completion_requests, before) << "the saturated engine got nothing new";

  ASSERT_TRUE(s.server.control(R"({"engine":{"waiting":0}})").has_value());
  auto res = held.get();
  EXPECT_EQ(res.result_int(), 200u);
  EXPECT_NE(res.body().find("data: [DONE]"), std::string::npos);
  EXPECT_GE(seconds_since(t0), 0.8);
  EXPECT_EQ(s.server.snapshot().completion_requests, before + 1);
  EXPECT_GE(metric(g.port, R"(sluice_upstream_holds_total{reason="engine"})"), 1);
}

TEST(Resilience, RoutesByModel) {
  sim_box a(sim_options({"model-a"}));
  sim_box b(sim_options({"model-b"}));
  auto ua = upstream_at("a", a.url());
  ua.models = {"model-a"};
  auto ub = upstream_at("b", b.url());
  ub.models = {"model-b"};
  gateway_box g(gateway_options({ua, ub}));
  auto body = [](std::string model) {
    return R"({"model":")" + model + R"(","messages":[{"role":"user","content":"hi"}]})";
  };
  auto ra = test::call(g.port, verb::post, "/v1/chat/completions", body("model-a"));
  EXPECT_EQ(ra.result_int(), 200u);
  EXPECT_EQ(header(ra, "x-sluice-upstream"), "a");
  auto rb = test::call(g.port, verb::post, "/v1/chat/completions", body("model-b"));
  EXPECT_EQ(rb.result_int(), 200u);
  EXPECT_EQ(header(rb, "x-sluice-upstream"), "b");
  auto missing = test::call(g.port, verb::post, "/v1/chat/completions", body("model-c"));
  EXPECT_EQ(missing.result_int(), 404u);
  EXPECT_NE(missing.body().find("model_not_found"), std::string::npos);
  EXPECT_NE(missing.body().find(R"("param":"model")"), std::string::npos);
  EXPECT_EQ(a.server.snapshot().completion_requests + b.server.snapshot().completion_requests, 2u);
}

TEST(Resilience, UsageIsAskedForAndStrippedWhenTokensArePaced) {
  sim_box s(sim_options());
  auto u = upstream_at("paced", s.url());
  u.tokens_per_minute = 1000000;
  gateway_box g(gateway_options({u}));
  auto plain = test::post_chat(g.port, true);
  ASSERT_EQ(plain.result_int(), 200u);
  EXPECT_EQ(plain.body().find(R"("usage":{)"), std::string::npos) << "the client did not ask: " << plain.body();
  EXPECT_NE(plain.body().find("data: [DONE]"), std::string::npos);
  // The stream is accounted just after its last byte went out: wait for that, not for the client.
  const auto ok_total = [&] { return metric(g.port, R"(sluice_requests_total{outcome="ok",route="chat_completions"})"); };
  ASSERT_LT(test::wait_until([&] { return ok_total() == 1; }, 2s), 2s);
  EXPECT_EQ(metric(g.port, "sluice_usage_chunks_stripped_total"), 1);
  auto asked = test::call(g.port, verb::post, "/v1/chat/completions",
                          test::chat_body(true, R"(,"stream_options":{"include_usage":true})"));
  ASSERT_EQ(asked.result_int(), 200u);
  EXPECT_NE(asked.body().find(R"("usage":{)"), std::string::npos) << "asked for: kept";
  ASSERT_LT(test::wait_until([&] { return ok_total() == 2; }, 2s), 2s);
  EXPECT_EQ(metric(g.port, "sluice_usage_chunks_stripped_total"), 1);
}

TEST(Resilience, FailedActiveProbeTakesAnUpstreamOutOfRotation) {
  sim_box good(sim_options());
  test::refused_port refused;
  auto dead = upstream_at("dead", refused.url(), 1000000);
  dead.probe = true;
  auto go = gateway_options({dead, upstream_at("good", good.url())});
  go.routing.probe_interval = 100ms;
  gateway_box g(go);
  ASSERT_LT(test::wait_until([&] { return metric(g.port, R"(sluice_upstream_healthy{upstream="dead"})") == 0; }, 10s),
            10s);
  for (int i = 0; i < 5; ++i) {
    auto res = test::post_chat(g.port, false);
    ASSERT_EQ(res.result_int(), 200u);
    EXPECT_EQ(header(res, "x-sluice-attempts"), "1") << "never tried: the probe already failed";
    EXPECT_EQ(header(res, "x-sluice-upstream"), "good");
  }
  EXPECT_EQ(test::call(g.port, verb::get, "/readyz").result_int(), 200u) << "one upstream is still usable";
}

TEST(Resilience, UpstreamsFromTheConfigFileThroughTheBinary) {
  sim_box a(sim_options({"model-a"}));
  sim_box b(sim_options({"model-b"}));
  char path[] = "/tmp/sluice-upstreams-XXXXXX";
  int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  {
    std::ofstream f(path);
    f << "upstreams:\n"
      << "  - name: alpha\n    url: " << a.url() << "\n    models: [model-a]\n    key-env: ALPHA_KEY\n"
      << "  - name: beta\n    url: " << b.url() << "\n    models: [model-b]\n    weight: 2\n"
      << "max-attempts: 2\nrequest-timeout: 30s\n";
  }
  test::child_process gw({"serve", "--listen", "127.0.0.1:0", "--threads", "1", "--config", path},
                         {"ALPHA_KEY=sk-alpha-planted", "OPENAI_API_KEY=sk-beta-planted"});
  auto port = gw.wait_port();
  ASSERT_TRUE(port.has_value()) << gw.output();
  auto body = [](std::string model) {
    return R"({"model":")" + model + R"(","messages":[{"role":"user","content":"hi"}],"stream":true})";
  };
  auto ra = test::call(*port, verb::post, "/v1/chat/completions", body("model-a"));
  EXPECT_EQ(ra.result_int(), 200u);
  EXPECT_EQ(header(ra, "x-sluice-upstream"), "alpha");
  auto rb = test::call(*port, verb::post, "/v1/chat/completions", body("model-b"));
  EXPECT_EQ(rb.result_int(), 200u);
  EXPECT_EQ(header(rb, "x-sluice-upstream"), "beta");
  EXPECT_EQ(a.server.snapshot().requests_with_auth, 1u) << "each upstream got a key";
  EXPECT_EQ(b.server.snapshot().requests_with_auth, 1u);
  EXPECT_EQ(gw.output().find("planted"), std::string::npos) << "keys never logged";
  ::unlink(path);
}
