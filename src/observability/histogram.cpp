#include "observability/histogram.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <functional>
#include <limits>
#include <utility>

namespace sluice::obs {

// The whole point of this type: observe() must never fall back to a lock inside std::atomic.
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
static_assert(std::atomic<double>::is_always_lock_free);

histogram::histogram(std::span<const double> upper_bounds)
    : bounds_(upper_bounds), counts_(std::make_unique<std::atomic<std::uint64_t>[]>(upper_bounds.size() + 1)) {
  assert(std::adjacent_find(bounds_.begin(), bounds_.end(), std::greater_equal<>()) == bounds_.end());
}

void histogram::observe(double value) noexcept {
  if (std::isnan(value)) return;
  // Prometheus buckets are "less than or equal": the first bound >= value.
  const auto i = static_cast<std::size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin());
  // Relaxed is enough: a scrape needs each counter to be exact eventually, not ordered with others.
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
}

std::uint64_t histogram::count() const noexcept {
  std::uint64_t n = 0;
  for (std::size_t i = 0; i <= bounds_.size(); ++i) n += counts_[i].load(std::memory_order_relaxed);
  return n;
}

double histogram::sum() const noexcept {
  return sum_.load(std::memory_order_relaxed);
}

prometheus::ClientMetric::Histogram histogram::snapshot() const {
  prometheus::ClientMetric::Histogram h;
  h.bucket.reserve(bounds_.size() + 1);
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i].load(std::memory_order_relaxed);
    prometheus::ClientMetric::Bucket b;
    b.cumulative_count = cumulative;
    b.upper_bound = i < bounds_.size() ? bounds_[i] : std::numeric_limits<double>::infinity();
    h.bucket.push_back(b);
  }
  // Count from the buckets just read, so +Inf == _count in every exposition.
  h.sample_count = cumulative;
  h.sample_sum = sum();
  return h;
}

histogram_family::histogram_family(std::string name, std::string help, std::span<const double> upper_bounds)
    : name_(std::move(name)), help_(std::move(help)) {
  members_.emplace_back(upper_bounds);
}

histogram_family::histogram_family(std::string name, std::string help, std::span<const double> upper_bounds,
                                   std::string label_name, std::vector<std::string> label_values)
    : name_(std::move(name)),
      help_(std::move(help)),
      label_name_(std::move(label_name)),
      label_values_(std::move(label_values)) {
  for (std::size_t i = 0; i < label_values_.size(); ++i) members_.emplace_back(upper_bounds);
}

prometheus::MetricFamily histogram_family::collect() const {
  prometheus::MetricFamily f;
  f.name = name_;
  f.help = help_;
  f.type = prometheus::MetricType::Histogram;
  f.metric.reserve(members_.size());
  for (std::size_t i = 0; i < members_.size(); ++i) {
    prometheus::ClientMetric m;
    if (!label_name_.empty()) m.label.push_back({label_name_, label_values_[i]});
    m.histogram = members_[i].snapshot();
    f.metric.push_back(std::move(m));
  }
  return f;
}

}  // namespace sluice::obs
