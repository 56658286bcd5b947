#include "observability/histogram.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <thread>
#include <vector>

namespace sluice::obs {
namespace {

constexpr std::array<double, 3> small_bounds = {1.0, 2.0, 5.0};

std::vector<std::uint64_t> cumulative(const histogram& h) {
  std::vector<std::uint64_t> v;
  for (const auto& b : h.snapshot().bucket) v.push_back(b.cumulative_count);
  return v;
}

TEST(histogram, buckets_are_less_or_equal_and_cumulative) {
  histogram h(small_bounds);
  h.observe(0.5);   // le 1
  h.observe(1.0);   // le 1: the bound itself belongs to its bucket
  h.observe(1.5);   // le 2
  h.observe(5.0);   // le 5
  h.observe(7.0);   // +Inf only
  h.observe(-3.0);  // below every bound: le 1
  EXPECT_EQ(cumulative(h), (std::vector<std::uint64_t>{3, 4, 5, 6}));
  const auto s = h.snapshot();
  EXPECT_EQ(s.sample_count, 6u);
  EXPECT_DOUBLE_EQ(s.sample_sum, 0.5 + 1.0 + 1.5 + 5.0 + 7.0 - 3.0);
  ASSERT_EQ(s.bucket.size(), 4u);
  EXPECT_EQ(s.bucket[0].upper_bound, 1.0);
  EXPECT_EQ(s.bucket[2].upper_bound, 5.0);
  EXPECT_TRUE(std::isinf(s.bucket[3].upper_bound));
}

TEST(histogram, nan_is_ignored_and_infinity_lands_in_the_last_bucket) {
  histogram h(small_bounds);
  h.observe(std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.sum(), 0.0);
  h.observe(2.0);
  EXPECT_EQ(cumulative(h), (std::vector<std::uint64_t>{0, 1, 1, 1}));
  EXPECT_FALSE(std::isnan(h.sum()));
}

TEST(histogram, observes_chrono_durations_in_seconds) {
  histogram h(latency_buckets);
  h.observe(std::chrono::milliseconds(250));
  h.observe(std::chrono::microseconds(100));
  EXPECT_EQ(h.count(), 2u);
  EXPECT_NEAR(h.sum(), 0.2501, 1e-12);
  const auto s = h.snapshot();
  // 100 µs sits exactly on the first bound.
  EXPECT_EQ(s.bucket.front().upper_bound, 0.0001);
  EXPECT_EQ(s.bucket.front().cumulative_count, 1u);
}

TEST(histogram, bucket_sets_are_strictly_increasing_and_span_the_promised_range) {
  EXPECT_TRUE(std::is_sorted(latency_buckets.begin(), latency_buckets.end(), std::less_equal<>()));
  EXPECT_TRUE(std::is_sorted(overhead_buckets.begin(), overhead_buckets.end(), std::less_equal<>()));
  EXPECT_DOUBLE_EQ(latency_buckets.front(), 100e-6);
  EXPECT_DOUBLE_EQ(latency_buckets.back(), 60.0);
  EXPECT_DOUBLE_EQ(overhead_buckets.front(), 10e-6);
  EXPECT_DOUBLE_EQ(overhead_buckets.back(), 0.1);
}

// Runs `threads` threads at once, thread t observing value(t) per_thread times.
template <class Value>
void observe_from_threads(histogram& h, int threads, int per_thread, Value value) {
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&h, t, per_thread, value] {
      for (int i = 0; i < per_thread; ++i) h.observe(value(t));
    });
  for (auto& th : pool) th.join();
}

TEST(histogram, concurrent_observers_lose_nothing) {
  histogram h(small_bounds);
  constexpr int threads = 4;
  constexpr int per_thread = 50000;
  // Halves and whole numbers add exactly in a double, so the sum can be compared exactly.
  observe_from_threads(h, threads, per_thread, [](int t) { return t % 2 == 0 ? 0.5 : 3.0; });
  EXPECT_EQ(h.count(), static_cast<std::uint64_t>(threads * per_thread));
  EXPECT_EQ(h.sum(), 2 * per_thread * 0.5 + 2 * per_thread * 3.0);
  EXPECT_EQ(cumulative(h), (std::vector<std::uint64_t>{100000, 100000, 200000, 200000}));
}

TEST(histogram, more_threads_than_shards_share_them_and_lose_nothing) {
  // The counters are sharded per thread; past the first 15 threads all share the last shard.
  histogram h(small_bounds);
  constexpr int threads = 40;
  constexpr int per_thread = 10000;
  observe_from_threads(h, threads, per_thread, [](int) { return 2.0; });
  EXPECT_EQ(h.count(), static_cast<std::uint64_t>(threads * per_thread));
  EXPECT_EQ(h.sum(), 2.0 * threads * per_thread);
  const auto snap = h.snapshot();
  EXPECT_EQ(snap.sample_count, static_cast<std::uint64_t>(threads * per_thread));
  EXPECT_EQ(snap.sample_sum, 2.0 * threads * per_thread);
}

TEST(histogram_family, labels_each_member_and_keeps_members_apart) {
  histogram_family f("x_seconds", "help text", small_bounds, "stage", {"a", "b"});
  ASSERT_EQ(f.size(), 2u);
  f.at(1).observe(1.5);
  const auto mf = f.collect();
  EXPECT_EQ(mf.name, "x_seconds");
  EXPECT_EQ(mf.help, "help text");
  EXPECT_EQ(mf.type, prometheus::MetricType::Histogram);
  ASSERT_EQ(mf.metric.size(), 2u);
  ASSERT_EQ(mf.metric[0].label.size(), 1u);
  EXPECT_EQ(mf.metric[0].label[0].name, "stage");
  EXPECT_EQ(mf.metric[0].label[0].value, "a");
  EXPECT_EQ(mf.metric[0].histogram.sample_count, 0u);
  EXPECT_EQ(mf.metric[1].label[0].value, "b");
  EXPECT_EQ(mf.metric[1].histogram.sample_count, 1u);
}

TEST(histogram_family, unlabeled_family_has_one_member_without_labels) {
  histogram_family f("y_seconds", "h", small_bounds);
  ASSERT_EQ(f.size(), 1u);
  f.at(0).observe(9.0);
  const auto mf = f.collect();
  ASSERT_EQ(mf.metric.size(), 1u);
  EXPECT_TRUE(mf.metric[0].label.empty());
  EXPECT_EQ(mf.metric[0].histogram.bucket.back().cumulative_count, 1u);
}

}  // namespace
}  // namespace sluice::obs
