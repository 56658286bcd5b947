// The exposition codec and the pod's merge: a real exposition reads and writes back unchanged,
// malformed lines are refused by line, counters and histograms sum, each gauge combines as it means,
// and an ended process's sums stay in the totals while its gauges go.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "observability/exposition.hpp"
#include "observability/metrics.hpp"

using namespace sluice;
using namespace sluice::obs;

namespace {

const char* kWorker = R"(# HELP sluice_requests_total Requests by route and outcome.
# TYPE sluice_requests_total counter
sluice_requests_total{outcome="ok",route="chat_completions"} 7
sluice_requests_total{outcome="ok",route="models"} 1
# HELP sluice_streams_active Streams being relayed.
# TYPE sluice_streams_active gauge
sluice_streams_active 3
# HELP sluice_max_streams The concurrency cap.
# TYPE sluice_max_streams gauge
sluice_max_streams 100
# HELP sluice_upstream_healthy Whether the upstream is in rotation.
# TYPE sluice_upstream_healthy gauge
sluice_upstream_healthy{upstream="a"} 1
# HELP sluice_worker_restarts_total Replacements started.
# TYPE sluice_worker_restarts_total counter
sluice_worker_restarts_total 2
# HELP sluice_ttft_seconds Time to first token.
# TYPE sluice_ttft_seconds histogram
sluice_ttft_seconds_bucket{le="0.1"} 4
sluice_ttft_seconds_bucket{le="+Inf"} 7
sluice_ttft_seconds_sum 0.75
sluice_ttft_seconds_count 7
)";

double value_of(const exposition& e, const std::string& series) {
  for (const auto& f : e)
    for (const auto& [k, v] : f.samples)
      if (k == series) return v;
  return -1;
}

TEST(Exposition, ARealExpositionReadsAndWritesBackUnchanged) {
  auto e = parse_exposition(kWorker);
  ASSERT_TRUE(e.has_value()) << e.err().message;
  ASSERT_EQ(e->size(), 6u);
  EXPECT_EQ((*e)[5].name, "sluice_ttft_seconds");
  EXPECT_EQ((*e)[5].samples.size(), 4u) << "a histogram's parts are one family";
  EXPECT_EQ(write_exposition(*e), kWorker);
}

TEST(Exposition, TheGatewaysOwnExpositionParses) {
  metrics_registry r;
  ASSERT_TRUE(r.add_callback_counter("sluice_test_total", "a \\ help with \"quotes\"", [] { return 1.5; }).has_value());
  const std::string text = r.serialize();
  auto e = parse_exposition(text);
  ASSERT_TRUE(e.has_value()) << e.err().message;
  EXPECT_EQ(value_of(*e, "sluice_test_total"), 1.5);
  EXPECT_GT(e->size(), 3u) << "the process collector's families too";
}

TEST(Exposition, MalformedLinesAreRefusedByLine) {
  for (const char* bad : {"x{a=\"1\" 2\n", "x{a=1} 2\n", "x 1 2 3z\n", "x abc\n", "# TYPE x sometimes\n", "{a=\"b\"} 1\n",
                          "x\n", "# TYPE x counter\n# TYPE x gauge\n", "x{a=\"\\\"} 1\n"}) {
    auto e = parse_exposition(bad);
    EXPECT_FALSE(e.has_value()) << bad;
    if (!e) {
      EXPECT_NE(e.err().message.find("line"), std::string::npos);
    }
  }
  auto ok = parse_exposition("x{a=\"q\\\"}\\n,\"} +Inf 1700000000\n\n# a comment\ny NaN\n");
  ASSERT_TRUE(ok.has_value()) << ok.err().message;
  EXPECT_EQ((*ok)[0].samples[0].first, "x{a=\"q\\\"}\\n,\"}");
}

TEST(Exposition, MergingSumsCountersAndHistogramsAndCombinesEachGaugeAsItMeans) {
  auto a = parse_exposition(kWorker);
  std::string other = kWorker;
  for (auto [from, to] : std::initializer_list<std::pair<std::string, std::string>>{
           {"chat_completions\"} 7", "chat_completions\"} 5"},
           {"sluice_streams_active 3", "sluice_streams_active 4"},
           {"healthy{upstream=\"a\"} 1", "healthy{upstream=\"a\"} 0"},
           {"le=\"+Inf\"} 7", "le=\"+Inf\"} 5"}})
    other.replace(other.find(from), from.size(), to);
  other += "# TYPE sluice_only_here_total counter\nsluice_only_here_total 1\n";
  auto b = parse_exposition(other);
  ASSERT_TRUE(a && b);
  const exposition m = merge_expositions({*a, *b});
  EXPECT_EQ(value_of(m, "sluice_requests_total{outcome=\"ok\",route=\"chat_completions\"}"), 12);
  EXPECT_EQ(value_of(m, "sluice_streams_active"), 7) << "streams: a sum";
  EXPECT_EQ(value_of(m, "sluice_max_streams"), 100) << "a configured figure: the same, not doubled";
  EXPECT_EQ(value_of(m, "sluice_upstream_healthy{upstream=\"a\"}"), 0) << "health: the worst";
  EXPECT_EQ(value_of(m, "sluice_worker_restarts_total"), 2) << "the pod's shared counter: once";
  EXPECT_EQ(value_of(m, "sluice_ttft_seconds_bucket{le=\"+Inf\"}"), 12);
  EXPECT_EQ(value_of(m, "sluice_ttft_seconds_sum"), 1.5);
  EXPECT_EQ(value_of(m, "sluice_only_here_total"), 1);
  auto again = parse_exposition(write_exposition(m));
  ASSERT_TRUE(again.has_value()) << "the merge is itself an exposition";
}

TEST(Exposition, AnEndedProcessesSumsStayAndItsGaugesGo) {
  exposition ended;
  auto w = parse_exposition(kWorker);
  ASSERT_TRUE(w.has_value());
  fold_ended(ended, *w);
  fold_ended(ended, *w);
  EXPECT_EQ(value_of(ended, "sluice_requests_total{outcome=\"ok\",route=\"chat_completions\"}"), 14);
  EXPECT_EQ(value_of(ended, "sluice_ttft_seconds_count"), 14);
  EXPECT_EQ(value_of(ended, "sluice_streams_active"), -1) << "a gauge of a process that is gone is dropped";
  EXPECT_EQ(value_of(ended, "sluice_worker_restarts_total"), -1) << "shared series live in the living";
  const exposition m = merge_expositions({*w, ended});
  EXPECT_EQ(value_of(m, "sluice_requests_total{outcome=\"ok\",route=\"chat_completions\"}"), 21);
}

TEST(Exposition, RulesNameTheGaugesThatAreNotSums) {
  EXPECT_EQ(rule_of("sluice_streams_active", "gauge"), merge_rule::sum);
  EXPECT_EQ(rule_of("process_resident_memory_bytes", "gauge"), merge_rule::sum);
  EXPECT_EQ(rule_of("sluice_memory_used_bytes", "gauge"), merge_rule::max);
  EXPECT_EQ(rule_of("sluice_pod_streams_in_use", "gauge"), merge_rule::max);
  EXPECT_EQ(rule_of("sluice_config_reloads_total", "counter"), merge_rule::max);
  EXPECT_EQ(rule_of("process_start_time_seconds", "gauge"), merge_rule::min);
  EXPECT_EQ(rule_of("sluice_requests_total", "counter"), merge_rule::sum);
  EXPECT_EQ(rule_of("sluice_shared_limits_degraded", "gauge"), merge_rule::max);
  EXPECT_EQ(rule_of("sluice_queue_jobs_waiting", "gauge"), merge_rule::max);
  EXPECT_EQ(listed_gauge_rule("sluice_no_such_gauge"), std::nullopt) << "an unlisted gauge is visible as such";
}

// One process's exposition of a single unlabeled gauge.
exposition one_gauge(std::string_view name, double v) {
  auto e = parse_exposition("# TYPE " + std::string(name) + " gauge\n" + std::string(name) + " " + std::to_string(v) + "\n");
  EXPECT_TRUE(e.has_value());
  return e ? *e : exposition{};
}

double merged(std::string_view name, const std::vector<double>& per_process) {
  std::vector<exposition> parts;
  for (double v : per_process) parts.push_back(one_gauge(name, v));
  return value_of(merge_expositions(parts), std::string(name));
}

// Every listed gauge, merged over 1, 2 and 3 processes, reads what its rule says it measures.
TEST(Exposition, EveryListedGaugeMergesByItsRuleAtOneTwoAndThreeProcesses) {
  ASSERT_FALSE(gauge_rules().empty());
  for (const auto& g : gauge_rules()) {
    for (const std::vector<double>& v : {std::vector<double>{5}, {5, 2}, {5, 2, 7}}) {
      double want = v[0];
      for (double x : std::span(v).subspan(1))
        want = g.rule == merge_rule::sum ? want + x : g.rule == merge_rule::max ? std::max(want, x) : std::min(want, x);
      EXPECT_EQ(merged(g.family, v), want) << g.family << " over " << v.size() << " processes";
    }
  }
}

// The figures an operator alerts and scales on: a fleet-wide state or reading is not multiplied by
// the process count, a per-process share adds up.
TEST(Exposition, AFleetGaugeIsNotMultipliedByTheProcessCount) {
  for (std::size_t n = 1; n <= 3; ++n) {
    const std::vector<double> degraded(n, 1.0), queue(n, 8.0), slots(n, 64.0), running(n, 10.0);
    EXPECT_EQ(merged("sluice_shared_limits_degraded", degraded), 1) << n << " processes, Redis down";
    EXPECT_EQ(merged("sluice_shared_limits_degraded", std::vector<double>(n, 0.0)), 0) << n << " processes";
    EXPECT_EQ(merged("sluice_queue_jobs_waiting", queue), 8) << n << " processes read the fleet's 8 queued jobs";
    EXPECT_EQ(merged("sluice_jobs_worker_slots", slots), 64.0 * static_cast<double>(n)) << "the pod's slots";
    EXPECT_EQ(merged("sluice_jobs_running", running), 10.0 * static_cast<double>(n));
    EXPECT_EQ(merged("sluice_max_streams", std::vector<double>(n, 256.0)), 256) << "a limit that holds for the pod";
  }
  EXPECT_EQ(merged("sluice_shared_limits_degraded", {0, 1, 0}), 1) << "degraded in any process: the pod is";
  EXPECT_EQ(merged("sluice_upstream_engine_saturated", {0, 0, 1}), 1);
  EXPECT_EQ(merged("sluice_upstream_healthy", {1, 0, 1}), 0);
}

}  // namespace
