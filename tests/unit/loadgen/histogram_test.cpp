#include "loadgen/histogram.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

using sluice::loadgen::histogram;

namespace {

// The exact order statistic the histogram approximates: the smallest sample with at least p% at
// or below it.
std::uint64_t exact(std::vector<std::uint64_t> v, double p) {
  std::sort(v.begin(), v.end());
  auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  rank = std::clamp<std::size_t>(rank, 1, v.size());
  return v[rank - 1];
}

}  // namespace

TEST(histogram, buckets_tile_the_whole_range) {
  // Every bucket starts where the previous one ends, and index_of maps both edges back.
  std::uint64_t expect = 0;
  for (std::size_t i = 0; i < histogram::bucket_count; ++i) {
    ASSERT_EQ(histogram::lower_bound(i), expect) << i;
    ASSERT_EQ(histogram::index_of(expect), i);
    const std::uint64_t last = expect + (histogram::width(i) - 1);
    ASSERT_EQ(histogram::index_of(last), i);
    expect = last + 1;
  }
  EXPECT_EQ(expect, 0u) << "the last bucket ends exactly at 2^64";
  EXPECT_EQ(histogram::index_of(~std::uint64_t{0}), histogram::bucket_count - 1);
}

TEST(histogram, bucket_width_is_under_one_percent_of_its_values) {
  for (std::size_t i = 2 * histogram::sub_count; i < histogram::bucket_count; ++i)
    ASSERT_LE(static_cast<double>(histogram::width(i)) / static_cast<double>(histogram::lower_bound(i)), 1.0 / 128 + 1e-12);
}

TEST(histogram, empty_reports_zero) {
  auto h = std::make_unique<histogram>();
  EXPECT_EQ(h->count(), 0u);
  EXPECT_EQ(h->value_at(50), 0u);
  EXPECT_EQ(h->value_at(100), 0u);
  EXPECT_EQ(h->min(), 0u);
}

TEST(histogram, small_values_are_exact) {
  auto h = std::make_unique<histogram>();
  for (std::uint64_t v = 1; v <= 100; ++v) h->record(v);
  EXPECT_EQ(h->value_at(50), 50u);
  EXPECT_EQ(h->value_at(90), 90u);
  EXPECT_EQ(h->value_at(99), 99u);
  EXPECT_EQ(h->value_at(100), 100u);
  EXPECT_EQ(h->min(), 1u);
}

TEST(histogram, percentiles_within_half_a_percent_of_exact) {
  std::mt19937_64 rng(42);
  // Log-normal latencies from ~10 us to seconds, in nanoseconds.
  std::lognormal_distribution<double> dist(std::log(5e6), 1.5);
  std::vector<std::uint64_t> samples;
  auto h = std::make_unique<histogram>();
  for (int i = 0; i < 200000; ++i) {
    auto v = static_cast<std::uint64_t>(dist(rng)) + 1;
    samples.push_back(v);
    h->record(v);
  }
  for (double p : {1.0, 10.0, 50.0, 90.0, 99.0, 99.9}) {
    const double want = static_cast<double>(exact(samples, p));
    const double got = static_cast<double>(h->value_at(p));
    EXPECT_NEAR(got, want, want * 0.005) << "p" << p;
  }
  EXPECT_EQ(h->value_at(100), *std::max_element(samples.begin(), samples.end()));
  EXPECT_EQ(h->max(), *std::max_element(samples.begin(), samples.end()));
}

TEST(histogram, merge_equals_recording_everything_in_one) {
  auto a = std::make_unique<histogram>(), b = std::make_unique<histogram>(), all = std::make_unique<histogram>();
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<std::uint64_t> dist(1, 1'000'000'000);
  for (int i = 0; i < 10000; ++i) {
    auto v = dist(rng);
    (i % 3 ? *a : *b).record(v);
    all->record(v);
  }
  a->merge(*b);
  EXPECT_EQ(a->count(), all->count());
  EXPECT_EQ(a->min(), all->min());
  EXPECT_EQ(a->max(), all->max());
  for (double p : {50.0, 90.0, 99.0}) EXPECT_EQ(a->value_at(p), all->value_at(p));
}

TEST(histogram, reported_value_stays_inside_observed_range) {
  auto h = std::make_unique<histogram>();
  h->record(1'000'003);  // alone in a wide bucket: the midpoint would overshoot the maximum
  EXPECT_EQ(h->value_at(50), 1'000'003u);
  EXPECT_EQ(h->value_at(99), 1'000'003u);
}
