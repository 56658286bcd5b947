// Metrics and logs of a live gateway: promtool accepts /metrics after a mixed workload, gauges rise
// during a flood and return to zero, rejections and overhead stages are counted, and a planted
// upstream key and client key never appear in any log line, response or metric.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "loadgen/loadgen.hpp"
#include "process.hpp"
#include "sim/server.hpp"
#include "test_client.hpp"

using namespace sluice;
using namespace std::chrono_literals;
using test::bhttp::verb;

namespace {

double metric_value(const std::string& text, const std::string& series) {
  auto pos = text.find("\n" + series + " ");
  if (pos == std::string::npos) return -1;
  return std::stod(text.substr(pos + series.size() + 2));
}

constexpr const char* kUpstreamKey = "sk-upstream-PLANTED-4c1e99a0";
constexpr const char* kClientKey = "sk-client-PLANTED-77b2d3f1";

}  // namespace

TEST(Observability, LiveMetricsPassPromtoolAndMoveAsTheyShould) {
  sim::options so;
  so.listen = "127.0.0.1:0";
  so.tokens = 20;
  so.token_delay = 20ms;
  sim::server sim(so);
  ASSERT_TRUE(sim.start().has_value());

  char keys_path[] = "/tmp/sluice-keys-XXXXXX";
  int fd = ::mkstemp(keys_path);
  ASSERT_GE(fd, 0);
  std::string keys = std::string(kClientKey) + " 100 0 test-client\n";
  ASSERT_EQ(::write(fd, keys.data(), keys.size()), static_cast<ssize_t>(keys.size()));
  ::close(fd);

  test::child_process gw({"serve", "--listen", "127.0.0.1:0", "--threads", "2", "--upstream",
                          "http://127.0.0.1:" + std::to_string(sim.port()), "--keys-file", keys_path,
                          "--max-streams", "50", "--queue-depth", "0", "--log-format", "json"},
                         {std::string("OPENAI_API_KEY=") + kUpstreamKey});
  auto port = gw.wait_port();
  ASSERT_TRUE(port.has_value()) << gw.output();
  const std::string auth = std::string("Bearer ") + kClientKey;

  // Mixed workload: a flood (some refused at the cap), bad JSON, an unknown key, a missing key.
  std::string responses;
  std::thread flood([&] {
    loadgen::options lo;
    lo.target = "http://127.0.0.1:" + std::to_string(*port);
    lo.concurrency = 80;
    lo.requests = 80;
    lo.model = "sim-1";
    lo.threads = 1;
    lo.progress = false;
    lo.headers = {"Authorization: " + auth};
    auto r = loadgen::run(lo);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->ok + r->status_errors, 80u) << loadgen::format_text(*r);
  });
  ASSERT_LT(test::wait_until([&] {
              auto m = test::call(*port, verb::get, "/metrics").body();
              return metric_value(m, "sluice_streams_active") >= 10 && metric_value(m, "sluice_stream_active_buffers") >= 10;
            }),
            10s)
      << "active streams and buffers rise during the flood";
  flood.join();
  for (auto& r : {test::post_chat(*port, false, {{"Authorization", auth}, {"x-sim-fault", "5xx"}}),
                  test::call(*port, verb::post, "/v1/chat/completions", "{bad", {{"Authorization", auth}}),
                  test::post_chat(*port, false, {{"Authorization", "Bearer sk-wrong-key"}}),
                  test::post_chat(*port, true)}) {
    for (auto& f : r) responses += std::string(f.name_string()) + ": " + std::string(f.value()) + "\n";
    responses += r.body();
  }
  auto ok = test::post_chat(*port, false, {{"Authorization", auth}});
  EXPECT_EQ(ok.result_int(), 200u);
  EXPECT_FALSE(ok["x-sluice-overhead-ms"].empty());

  std::string metrics;
  ASSERT_LT(test::wait_until([&] {
              metrics = test::call(*port, verb::get, "/metrics").body();
              return metric_value(metrics, "sluice_streams_active") == 0 &&
                     metric_value(metrics, "sluice_stream_active_buffers") == 0;
            }),
            10s)
      << "gauges return to zero after the flood";
  EXPECT_EQ(metric_value(metrics, "sluice_stream_buffered_bytes"), 0);
  EXPECT_GT(metric_value(metrics, "sluice_rejections_total{reason=\"unauthorized\"}"), 0);
  EXPECT_GT(metric_value(metrics, "sluice_rejections_total{reason=\"queue_full\"}"), 0);
  EXPECT_GT(metric_value(metrics, "sluice_rejections_total{reason=\"bad_request\"}") +
                metric_value(metrics, "sluice_requests_total{outcome=\"client_error\",route=\"chat_completions\"}"),
            0);
  for (auto stage : {"parse", "queue", "connect", "relay"})
    EXPECT_GT(metric_value(metrics, std::string("sluice_overhead_seconds_count{stage=\"") + stage + "\"}"), 0) << stage;
  EXPECT_GT(metric_value(metrics, "sluice_time_to_first_token_seconds_count"), 0);
  EXPECT_GT(metric_value(metrics, "sluice_upstream_requests_total{status=\"500\",upstream=\"default\"}"), 0);
  EXPECT_NE(metrics.find("process_resident_memory_bytes"), std::string::npos);

  if (std::system("command -v promtool >/dev/null 2>&1") == 0) {
    std::string path = std::string(keys_path) + ".prom";
    std::ofstream(path) << metrics;
    std::string cmd = "promtool check metrics < " + path + " > " + path + ".out 2>&1";
    int rc = std::system(cmd.c_str());
    std::ifstream in(path + ".out");
    std::string report((std::istreambuf_iterator<char>(in)), {});
    EXPECT_EQ(rc, 0) << report;
    std::remove(path.c_str());
    std::remove((path + ".out").c_str());
  } else {
    ADD_FAILURE() << "promtool is not installed (scripts/install-deps.sh installs it)";
  }

  EXPECT_EQ(gw.signal_and_wait(SIGTERM), 0);
  std::remove(keys_path);
  const std::string logs = gw.output();
  EXPECT_NE(logs.find("\"stream completed\""), std::string::npos) << logs.substr(0, 500);
  EXPECT_NE(logs.find("\"request refused\""), std::string::npos);
  for (const std::string& where : {logs, responses, metrics}) {
    EXPECT_EQ(where.find(kUpstreamKey), std::string::npos);
    EXPECT_EQ(where.find(kClientKey), std::string::npos);
    EXPECT_EQ(where.find("PLANTED"), std::string::npos);
  }
}
