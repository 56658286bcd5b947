// The exposition codec and the pod's merge: a real exposition reads and writes back unchanged,
// malformed lines are refused by line, counters and histograms sum, each gauge combines as it means,
// and an ended process's sums stay in the totals while its gauges go.
#include <gtest/gtest.h>

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
}

}  // namespace
