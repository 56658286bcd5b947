// The Prometheus text exposition (format 0.0.4) as data: parse what a sluice process serves on
// /metrics, merge several processes' expositions into one (the pod's view under `--processes N`:
// counters and histograms summed, each gauge as it means), and write it back. Pure, no I/O;
// thread-compatible. The parser takes any text (it is fuzzed: fuzz/fuzz_exposition.cpp) and refuses
// what it cannot read with an error naming the line.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.hpp"

namespace sluice::obs {

struct exposition_family {
  std::string name;
  std::string help;  // as written after "# HELP name " (escapes kept)
  std::string type;  // counter, gauge, histogram, summary, untyped ("" when no TYPE line)
  // Each sample's series ("name" or "name{labels}", exactly as written) and value.
  std::vector<std::pair<std::string, double>> samples;
};
using exposition = std::vector<exposition_family>;

result<exposition> parse_exposition(std::string_view text);
std::string write_exposition(const exposition& e);

// How one family's series combine across processes. Counters, histograms and summaries are sums,
// except the pod's shared series (sluice_pod_*, sluice_worker_*, sluice_config_*: one segment every
// worker reads, so the same in each: max). A gauge combines by what it measures, written down for
// every gauge the gateway exposes in gauge_rules() (exposition.cpp):
//   sum  each process holds its own share (streams, connections, bytes, jobs running, its slots)
//   max  the same figure in every process (a configured limit, the pod's shared segment, a
//        fleet-wide reading such as the queue's length in Redis), or "in any process" for a 0/1
//        state (shared limits degraded, an engine saturated): summing would count it N times
//   min  a worst case (an upstream's health, its remaining rate limit, the oldest start time)
enum class merge_rule { sum, max, min };
struct gauge_rule {
  std::string_view family;
  merge_rule rule;
};
// Every gauge the gateway exposes, with its rule. A gauge missing here is a test failure
// (tests/unit/app/metrics_test.cpp, tests/integration/processes_test.cpp), not a silent sum.
std::span<const gauge_rule> gauge_rules() noexcept;
// The listed rule of a gauge family; nullopt when gauge_rules() does not name it.
std::optional<merge_rule> listed_gauge_rule(std::string_view family) noexcept;
// The rule the merge applies: a listed gauge's, the shared series' max, otherwise a sum (what an
// unlisted gauge falls back to at run time; the tests keep there from being one).
merge_rule rule_of(std::string_view family, std::string_view type) noexcept;

// One exposition of several: families in first-seen order, each series combined by its family's
// rule. A family whose type differs between the parts keeps the first part's and sums.
exposition merge_expositions(const std::vector<exposition>& parts);

// Folds `ended` (the last exposition of a process that has ended) into `into`, the running total of
// ended processes: what sums is added, gauges and shared series are dropped (a gauge of a process
// that is gone means nothing; the shared ones live on in the living processes).
void fold_ended(exposition& into, const exposition& ended);

}  // namespace sluice::obs
