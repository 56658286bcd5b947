#include "observability/component_metrics.hpp"

#include <map>

namespace sluice::obs {

namespace {
// Each thread adds to its own slot; threads past the slot count share slots (still atomic).
std::size_t this_thread_slot(std::size_t slots) noexcept {
  static std::atomic<std::size_t> next{0};
  thread_local const std::size_t mine = next.fetch_add(1, std::memory_order_relaxed);
  return mine % slots;
}
}  // namespace

sharded_counter::sharded_counter() = default;

void sharded_counter::add(std::uint64_t n) noexcept {
  slots_[this_thread_slot(shards)].v.fetch_add(n, std::memory_order_relaxed);
}

std::uint64_t sharded_counter::value() const noexcept {
  std::uint64_t sum = 0;
  for (const auto& s : slots_) sum += s.v.load(std::memory_order_relaxed);
  return sum;
}

prometheus::Family<prometheus::Counter>& component_metrics::counter_family(const std::string& name,
                                                                           const std::string& help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(registry_);
}

prometheus::Family<prometheus::Gauge>& component_metrics::gauge_family(const std::string& name,
                                                                       const std::string& help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(registry_);
}

prometheus::Gauge& component_metrics::gauge(const std::string& name, const std::string& help) {
  return gauge_family(name, help).Add({});
}

prometheus::Counter& component_metrics::counter(const std::string& name, const std::string& help) {
  return counter_family(name, help).Add({});
}

histogram_family& component_metrics::histograms(std::string name, std::string help, std::span<const double> bounds,
                                                std::string label, std::vector<std::string> values) {
  if (label.empty()) return histograms_.emplace_back(std::move(name), std::move(help), bounds);
  return histograms_.emplace_back(std::move(name), std::move(help), bounds, std::move(label), std::move(values));
}

void component_metrics::scraped(const std::string& name, const std::string& help, labels l,
                                std::function<double()> read) {
  scraped_.push_back({name, help, std::move(l), std::move(read)});
}

sharded_counter& component_metrics::sharded(const std::string& name, const std::string& help, labels l) {
  auto& c = sharded_.emplace_back();
  scraped(name, help, std::move(l), [&c] { return static_cast<double>(c.value()); });
  return c;
}

std::vector<prometheus::MetricFamily> component_metrics::Collect() const {
  auto out = registry_.Collect();
  for (const auto& h : histograms_) out.push_back(h.collect());
  // Scraped series: one family per name, in the order the names were first given.
  std::map<std::string, std::size_t> at;
  for (const auto& s : scraped_) {
    auto [it, fresh] = at.try_emplace(s.name, out.size());
    if (fresh) {
      prometheus::MetricFamily f;
      f.name = s.name;
      f.help = s.help;
      f.type = s.name.ends_with("_total") ? prometheus::MetricType::Counter : prometheus::MetricType::Gauge;
      out.push_back(std::move(f));
    }
    auto& f = out[it->second];
    prometheus::ClientMetric m;
    for (const auto& [k, v] : s.l) m.label.push_back({k, v});
    (f.type == prometheus::MetricType::Counter ? m.counter.value : m.gauge.value) = s.read();
    f.metric.push_back(std::move(m));
  }
  return out;
}

}  // namespace sluice::obs
