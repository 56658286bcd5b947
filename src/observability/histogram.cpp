#include "observability/histogram.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <functional>
#include <limits>
#include <new>
#include <utility>

namespace sluice::obs {

// The whole point of this type: observe() must never fall back to a lock inside std::atomic.
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
static_assert(std::atomic<double>::is_always_lock_free);

namespace {
// The first shards - 1 threads to observe (in the process, across all histograms) each own a shard
// and update it with plain loads and stores; every later thread shares the last shard through
// atomic read-modify-writes. Scrapes only load, so either way nothing is lost or torn.
struct shard_ticket {
  std::size_t shard;
  bool exclusive;
};
shard_ticket this_thread_shard(std::size_t shards) noexcept {
  static std::atomic<std::size_t> next{0};
  thread_local const shard_ticket mine = [shards] {
    const std::size_t n = next.fetch_add(1, std::memory_order_relaxed);
    return n + 1 < shards ? shard_ticket{n, true} : shard_ticket{shards - 1, false};
  }();
  return mine;
}
}  // namespace

histogram::histogram(std::span<const double> upper_bounds) : bounds_(upper_bounds) {
  assert(std::adjacent_find(bounds_.begin(), bounds_.end(), std::greater_equal<>()) == bounds_.end());
  constexpr std::size_t slot = sizeof(std::uint64_t);
  static_assert(sizeof(std::atomic<double>) == slot && sizeof(std::atomic<std::uint64_t>) == slot);
  const std::size_t per_line = line / slot;
  stride_ = (bounds_.size() + 2 + per_line - 1) / per_line * per_line;  // sum + counts, whole lines
  raw_ = std::make_unique<std::byte[]>(shards * stride_ * slot + line);
  auto addr = reinterpret_cast<std::uintptr_t>(raw_.get());
  slots_ = raw_.get() + ((line - addr % line) % line);
  for (std::size_t s = 0; s < shards; ++s) {
    new (&shard_sum(s)) std::atomic<double>(0.0);
    for (std::size_t i = 0; i <= bounds_.size(); ++i) new (&shard_counts(s)[i]) std::atomic<std::uint64_t>(0);
  }
}

std::atomic<double>& histogram::shard_sum(std::size_t s) const noexcept {
  return *reinterpret_cast<std::atomic<double>*>(slots_ + s * stride_ * sizeof(std::uint64_t));
}

std::atomic<std::uint64_t>* histogram::shard_counts(std::size_t s) const noexcept {
  return reinterpret_cast<std::atomic<std::uint64_t>*>(slots_ + (s * stride_ + 1) * sizeof(std::uint64_t));
}

void histogram::observe(double value) noexcept {
  if (std::isnan(value)) return;
  // Prometheus buckets are "less than or equal": the first bound >= value.
  const auto i = static_cast<std::size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin());
  const shard_ticket t = this_thread_shard(shards);
  auto& count = shard_counts(t.shard)[i];
  auto& sum = shard_sum(t.shard);
  // Relaxed is enough: a scrape needs each counter to be exact eventually, not ordered with others.
  if (t.exclusive) {  // the only writer: no locked instruction needed
    count.store(count.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    sum.store(sum.load(std::memory_order_relaxed) + value, std::memory_order_relaxed);
  } else {
    count.fetch_add(1, std::memory_order_relaxed);
    sum.fetch_add(value, std::memory_order_relaxed);
  }
}

std::uint64_t histogram::count() const noexcept {
  std::uint64_t n = 0;
  for (std::size_t s = 0; s < shards; ++s)
    for (std::size_t i = 0; i <= bounds_.size(); ++i) n += shard_counts(s)[i].load(std::memory_order_relaxed);
  return n;
}

double histogram::sum() const noexcept {
  double total = 0;
  for (std::size_t s = 0; s < shards; ++s) total += shard_sum(s).load(std::memory_order_relaxed);
  return total;
}

prometheus::ClientMetric::Histogram histogram::snapshot() const {
  prometheus::ClientMetric::Histogram h;
  h.bucket.reserve(bounds_.size() + 1);
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i <= bounds_.size(); ++i) {
    for (std::size_t s = 0; s < shards; ++s) cumulative += shard_counts(s)[i].load(std::memory_order_relaxed);
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
