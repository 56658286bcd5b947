// Overload safety end to end: the classic failure (thousands of concurrent streams) against the
// real `sluice serve` binary with a small stream cap and memory limit, faked memory pressure, and
// the SIGTERM drain. The simulator runs in-process; the gateway is a child process so its RSS is
// its own.
#include <gtest/gtest.h>

#include <atomic>

#include "app/gateway.hpp"
#include "loadgen/loadgen.hpp"
#include "process.hpp"
#include "sim/server.hpp"
#include "test_client.hpp"

using namespace sluice;
using namespace std::chrono_literals;
using test::bhttp::verb;

namespace {

#if defined(__SANITIZE_ADDRESS__)
// ASan's shadow memory and quarantine inflate RSS several times: the memory figures are only
// meaningful in the normal build, so the sanitizer run checks behaviour with a larger limit.
constexpr bool kSanitized = true;
constexpr const char* kMemoryLimit = "2GiB";
constexpr std::uint64_t kStreams = 2000;  // everything runs several times slower
#else
constexpr bool kSanitized = false;
constexpr const char* kMemoryLimit = "128MiB";
constexpr std::uint64_t kStreams = 5000;
#endif

std::unique_ptr<sim::server> start_sim(std::uint64_t tokens, std::string token_delay) {
  sim::options so;
  so.listen = "127.0.0.1:0";
  so.threads = 1;
  so.tokens = tokens;
  so.token_delay = *parse_duration(token_delay);
  auto s = std::make_unique<sim::server>(so);
  EXPECT_TRUE(s->start().has_value());
  return s;
}

}  // namespace

// 5,000 concurrent streams against --max-streams 200 and --memory-limit 128MiB: every admitted
// stream completes intact, every other request is refused with 503/429 and Retry-After, RSS stays
// under 70% of the limit, and the gateway still serves afterwards.
TEST(Overload, FloodOfFiveThousandStreamsIsAdmittedOrRefusedCleanly) {
  auto sim = start_sim(16, "20ms");
  test::child_process gw({"serve", "--listen", "127.0.0.1:0", "--threads", "2", "--upstream",
                          "http://127.0.0.1:" + std::to_string(sim->port()), "--max-streams", "200",
                          "--queue-depth", "200", "--queue-timeout", "1s", "--memory-limit", kMemoryLimit,
                          "--log-level", "warn"});
  auto port = gw.wait_port();
  ASSERT_TRUE(port.has_value()) << gw.output();

  loadgen::options lo;
  lo.target = "http://127.0.0.1:" + std::to_string(*port);
  lo.concurrency = kStreams;
  lo.requests = kStreams;
  lo.model = "sim-1";
  lo.threads = 2;
  lo.duration_limit = 120s;
  lo.progress = false;
  lo.pid = static_cast<std::uint64_t>(gw.pid());
  auto r = loadgen::run(lo);
  ASSERT_TRUE(r.has_value()) << r.err().message;
  SCOPED_TRACE(loadgen::format_text(*r));

  EXPECT_EQ(r->ok + r->status_errors, kStreams);
  EXPECT_GT(r->ok, 200u);
  EXPECT_EQ(r->truncated + r->malformed + r->error_events + r->connect_errors + r->timeouts, 0u);
  std::uint64_t refused = 0;
  for (auto [code, n] : r->status_counts) {
    if (code == 200) continue;
    EXPECT_TRUE(code == 503 || code == 429) << "status " << code;
    refused += n;
  }
  EXPECT_EQ(refused, r->status_errors);
  EXPECT_EQ(r->retry_after_seen, refused) << "every refusal carries Retry-After";
  ASSERT_GT(r->peak_rss_bytes, 0u);
  if (!kSanitized) {
    EXPECT_LT(static_cast<double>(r->peak_rss_bytes), 0.70 * 128 * 1024 * 1024)
        << "gateway peak RSS " << r->peak_rss_bytes;
  }
  std::printf("gateway peak RSS %.1f MiB (baseline %.1f MiB), %llu ok, %llu refused\n",
              static_cast<double>(r->peak_rss_bytes) / (1 << 20), static_cast<double>(r->baseline_rss_bytes) / (1 << 20),
              static_cast<unsigned long long>(r->ok), static_cast<unsigned long long>(r->status_errors));

  auto after = test::post_chat(*port, true);
  EXPECT_EQ(after.result_int(), 200u);
  EXPECT_NE(after.body().find("[DONE]"), std::string::npos);
  EXPECT_EQ(gw.signal_and_wait(SIGTERM), 0) << gw.output();
}

// SIGTERM: readiness fails at once, running streams finish, the process exits 0.
TEST(Overload, SigtermDrainsRunningStreamsAndExitsZero) {
  auto sim = start_sim(20, "50ms");  // ~1 s streams
  test::child_process gw({"serve", "--listen", "127.0.0.1:0", "--threads", "1", "--upstream",
                          "http://127.0.0.1:" + std::to_string(sim->port()), "--drain-delay", "300ms",
                          "--drain-timeout", "10s", "--log-level", "warn"});
  auto port = gw.wait_port();
  ASSERT_TRUE(port.has_value()) << gw.output();
  ASSERT_EQ(test::call(*port, verb::get, "/readyz").result_int(), 200u);

  test::client_socket stream(*port);
  std::string body = test::chat_body(true);
  stream.send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
              std::to_string(body.size()) + "\r\n\r\n" + body);
  ASSERT_LT(test::wait_until([&] { return sim->snapshot().active_streams > 0; }), 5s);
  ::kill(gw.pid(), SIGTERM);
  ASSERT_LT(test::wait_until([&] { return test::call(*port, verb::get, "/readyz").result_int() == 503; }, 2s), 2s);
  auto raw = stream.read_all();
  EXPECT_NE(raw.find("data: [DONE]"), std::string::npos) << "the running stream finished";
  EXPECT_EQ(gw.signal_and_wait(0), 0) << gw.output();
}

// Faked memory pressure: over the shed threshold new requests get 503 and readiness fails; back
// under the ready threshold both recover. At saturation the stream holding the most buffered bytes
// is reset first, with an in-band error.
TEST(Overload, FakedMemoryPressureShedsResetsLargestFirstAndRecovers) {
  auto sim = start_sim(4, "1ms");
  std::atomic<std::size_t> fake_rss{10 << 20};
  app::serve_options go;
  go.http.listen = "127.0.0.1:0";
  go.http.threads = 1;
  go.upstream.urls = {"http://127.0.0.1:" + std::to_string(sim->port())};
  go.admission.memory_limit = 100 << 20;
  go.admission.max_resets_per_tick = 1;
  go.admission.memory_sample_interval = 1h;  // the test samples by hand
  auto made = app::gateway::make(go, "", [&] { return fake_rss.load(); });
  ASSERT_TRUE(made.has_value()) << made.err().message;
  app::gateway& gw = **made;
  auto ep = gw.start();
  ASSERT_TRUE(ep.has_value());
  const auto port = ep->port();

  EXPECT_EQ(test::post_chat(port, false).result_int(), 200u);
  fake_rss = 95 << 20;  // over 90%: shed
  gw.sample_memory();
  auto shed = test::post_chat(port, false);
  EXPECT_EQ(shed.result_int(), 503u);
  EXPECT_FALSE(shed[test::bhttp::field::retry_after].empty());
  EXPECT_EQ(test::call(port, verb::get, "/readyz").result_int(), 503u);
  fake_rss = 50 << 20;  // under 80%: ready again
  gw.sample_memory();
  EXPECT_EQ(test::call(port, verb::get, "/readyz").result_int(), 200u);
  EXPECT_EQ(test::post_chat(port, false).result_int(), 200u);

  // Two stalled streams: one with big events (its buffer grew), one with small ones.
  auto open_stream = [&](const std::string& token_size) {
    auto c = std::make_unique<test::client_socket>(port);
    std::string body = test::chat_body(true);
    c->send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nx-sim-token-size: " +
            token_size + "\r\nx-sim-fault: stall\r\nx-sim-fault-after: 2\r\nContent-Length: " +
            std::to_string(body.size()) + "\r\n\r\n" + body);
    return c;
  };
  auto big = open_stream("20000");
  auto small = open_stream("4");
  ASSERT_LT(test::wait_until([&] { return gw.streams().size() == 2; }), 5s);
  ASSERT_LT(test::wait_until([&] { return gw.streams().buffered_total() > 20000; }), 5s);

  fake_rss = 101 << 20;  // saturated: one reset per tick, largest first
  gw.sample_memory();
  std::string big_raw = big->read_all();  // ends once the gateway ends that stream
  EXPECT_NE(big_raw.find("data: {\"error\":"), std::string::npos) << big_raw.substr(0, 300);
  EXPECT_NE(big_raw.find("memory budget"), std::string::npos);
  EXPECT_EQ(gw.streams().size(), 1u) << "only the largest stream was reset in this tick";
  gw.sample_memory();
  std::string small_raw = small->read_all();
  EXPECT_NE(small_raw.find("data: {\"error\":"), std::string::npos);
}
