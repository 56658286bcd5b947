#include "redis/backoff.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <random>

namespace sluice::redis {
namespace {

using namespace std::chrono_literals;

TEST(RedisBackoff, FullJitterUnderAGrowingCappedCeiling) {
  std::minstd_rand rng(7);
  for (unsigned attempt = 0; attempt < 12; ++attempt) {
    const duration ceiling = std::min<duration>(50ms * (2u << attempt), 2s);
    duration lowest = 1h, highest = 0ms;
    for (int i = 0; i < 2000; ++i) {
      const duration d = backoff_delay(50ms, 2s, attempt, rng);
      ASSERT_GE(d, 50ms);
      ASSERT_LE(d, ceiling);
      lowest = std::min(lowest, d);
      highest = std::max(highest, d);
    }
    {  // spread over the whole range, not a fixed step
      EXPECT_LT(lowest, 50ms + (ceiling - 50ms) / 10) << attempt;
      EXPECT_GT(highest, ceiling - (ceiling - 50ms) / 10) << attempt;
    }
  }
}

TEST(RedisBackoff, FirstRetryAndDegenerateRanges) {
  std::minstd_rand rng(1);
  const duration first = backoff_delay(50ms, 2s, 0, rng);
  EXPECT_GE(first, 50ms);
  EXPECT_LE(first, 100ms);
  EXPECT_EQ(backoff_delay(50ms, 50ms, 5, rng), 50ms);
  EXPECT_EQ(backoff_delay(100ms, 10ms, 5, rng), 100ms);  // a cap under the floor: the floor
  EXPECT_LE(backoff_delay(50ms, 2s, 1000, rng), 2s);     // no overflow on a long outage
}

}  // namespace
}  // namespace sluice::redis
