// component_metrics: the base of a component's own metrics struct (Envoy-style per-component
// stats): counters and gauges in a private prometheus registry, lock-free histograms, sharded
// counters for per-event hot paths, and gauges read from the component at scrape time. The
// component registers the struct with the metrics_registry; Collect() yields all of its families.
// Build everything in the derived constructor; afterwards the hot-path references are plain
// pointers, lock-free and callable from any thread.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <span>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "observability/histogram.hpp"

namespace sluice::obs {

// A counter bumped per streamed event from every worker thread: one slot per thread (on its own
// cache line; the histogram's thread shards), summed at scrape time, so the hot path never shares
// a cache line with another core. Values are whole units (bytes, events).
class sharded_counter {
 public:
  sharded_counter();
  sharded_counter(const sharded_counter&) = delete;
  sharded_counter& operator=(const sharded_counter&) = delete;

  void add(std::uint64_t n) noexcept;
  std::uint64_t value() const noexcept;

 private:
  static constexpr std::size_t shards = 16;
  struct alignas(64) slot {
    std::atomic<std::uint64_t> v{0};
  };
  std::array<slot, shards> slots_;
};

class component_metrics : public prometheus::Collectable {
 public:
  component_metrics() = default;
  component_metrics(const component_metrics&) = delete;
  component_metrics& operator=(const component_metrics&) = delete;

  std::vector<prometheus::MetricFamily> Collect() const override;

 protected:
  using labels = std::map<std::string, std::string>;
  // Counter and gauge families in this component's registry; add series with .Add(labels).
  prometheus::Family<prometheus::Counter>& counter_family(const std::string& name, const std::string& help);
  prometheus::Family<prometheus::Gauge>& gauge_family(const std::string& name, const std::string& help);
  prometheus::Gauge& gauge(const std::string& name, const std::string& help);
  prometheus::Counter& counter(const std::string& name, const std::string& help);
  // A histogram family (unlabeled, or one histogram per value of `label`).
  histogram_family& histograms(std::string name, std::string help, std::span<const double> bounds,
                               std::string label = {}, std::vector<std::string> values = {});
  // One series read from the component when scraped: `read` runs on the scraping thread and must be
  // thread-safe and valid for this struct's lifetime. Several calls with the same name and
  // different labels make one family. Names ending in _total are counters, the rest gauges.
  void scraped(const std::string& name, const std::string& help, labels l, std::function<double()> read);
  // A sharded counter exposed as one series of a counter family.
  sharded_counter& sharded(const std::string& name, const std::string& help, labels l);

 private:
  struct scraped_series {
    std::string name, help;
    labels l;
    std::function<double()> read;
  };
  prometheus::Registry registry_;
  std::deque<histogram_family> histograms_;
  std::deque<sharded_counter> sharded_;
  std::vector<scraped_series> scraped_;
};

}  // namespace sluice::obs
