// A fixed-bucket histogram whose observe() is lock-free, plus a family of them keyed by one label.
// observe() may run on any thread at any time; snapshots run on the scrape thread. Both types are
// neither copyable nor movable: the hot path keeps plain references to them.
#pragma once

#include <prometheus/client_metric.h>
#include <prometheus/metric_family.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace sluice::obs {

// Why not prometheus::Histogram: in prometheus-cpp 1.0 its Observe() takes a std::mutex to keep sum
// and buckets consistent for Collect(). Every worker thread recording a latency would then contend
// on one lock. Here each bucket is its own atomic; a scrape may see a sample in a bucket before its
// value reaches the sum, which Prometheus tolerates (rates over minutes smooth it away).
// The counters are sharded by thread (shards on their own cache lines; the first threads each own
// one, later threads share the last): the relay observes per streamed event, and one set of
// counters written by every worker would bounce its cache lines between the cores.

// Request-scale latencies, 100 µs .. 60 s (roughly 1-2.5-5 steps per decade).
inline constexpr std::array<double, 18> latency_buckets = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0};

// The gateway's own per-stage cost, 10 µs .. 100 ms: the part a proxy must keep small.
inline constexpr std::array<double, 13> overhead_buckets = {0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001,
                                                            0.0025,  0.005,    0.01,    0.025,  0.05,    0.1};

class histogram {
 public:
  // `upper_bounds` must be strictly increasing and finite, and must outlive the histogram (the
  // bucket sets above are static). The +Inf bucket is implicit.
  explicit histogram(std::span<const double> upper_bounds);
  histogram(const histogram&) = delete;
  histogram& operator=(const histogram&) = delete;

  // NaN is ignored: one NaN would poison the sum for the life of the process.
  void observe(double value) noexcept;
  template <class Rep, class Period>
  void observe(std::chrono::duration<Rep, Period> d) noexcept {
    observe(std::chrono::duration<double>(d).count());
  }

  std::uint64_t count() const noexcept;
  double sum() const noexcept;
  // Cumulative buckets as Prometheus wants them; the +Inf bucket equals sample_count.
  prometheus::ClientMetric::Histogram snapshot() const;

 private:
  static constexpr std::size_t shards = 16;
  static constexpr std::size_t line = 64;
  // Per shard: the sum, then a non-cumulative count per bucket (bounds_.size() + 1, the last is
  // +Inf), padded to whole cache lines; stride_ slots of 8 bytes apart.
  std::atomic<double>& shard_sum(std::size_t s) const noexcept;
  std::atomic<std::uint64_t>* shard_counts(std::size_t s) const noexcept;

  std::span<const double> bounds_;
  std::size_t stride_;
  std::unique_ptr<std::byte[]> raw_;  // over-allocated for alignment
  std::byte* slots_;                  // 64-byte aligned
};

// One histogram metric family: either a single unlabeled histogram or one per value of one label.
// The label values are fixed at construction, which keeps the series count bounded.
class histogram_family {
 public:
  histogram_family(std::string name, std::string help, std::span<const double> upper_bounds);
  histogram_family(std::string name, std::string help, std::span<const double> upper_bounds, std::string label_name,
                   std::vector<std::string> label_values);
  histogram_family(const histogram_family&) = delete;
  histogram_family& operator=(const histogram_family&) = delete;

  // i indexes label_values (0 for the unlabeled family). Precondition: i < size().
  histogram& at(std::size_t i) noexcept { return members_[i]; }
  std::size_t size() const noexcept { return members_.size(); }
  const std::string& name() const noexcept { return name_; }

  prometheus::MetricFamily collect() const;

 private:
  std::string name_;
  std::string help_;
  std::string label_name_;
  std::vector<std::string> label_values_;
  std::deque<histogram> members_;  // deque: histogram is immovable; references stay valid
};

}  // namespace sluice::obs
