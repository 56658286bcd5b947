// admission::fallback_carry: what a client key's shared limits carry across a switch to deciding
// alone (Redis away, failure mode local) and back, so that no switch hands out a fresh budget.
#include "admission/fallback_carry.hpp"

#include <gtest/gtest.h>

using namespace sluice::admission;
using namespace std::chrono_literals;

namespace {
const auto t0 = fallback_carry::clock::time_point{} + 1000s;
}

TEST(FallbackCarry, FallingBackStartsFromWhatTheFleetHadLeftRefilledSince) {
  fallback_carry c(60, 6000);  // a request a second, 100 tokens a second
  c.answered({10, 1000}, t0);
  EXPECT_TRUE(c.deciding_alone()) << "the first decision alone is the switch";
  EXPECT_FALSE(c.deciding_alone());
  const auto left = c.fleet_left(t0 + 5s);
  ASSERT_TRUE(left.has_value());
  EXPECT_NEAR(left->requests, 15, 1e-6);
  EXPECT_NEAR(left->tokens, 1500, 1e-6);
  // Never above the limits, however long ago.
  EXPECT_NEAR(c.fleet_left(t0 + 10min)->requests, 60, 1e-6);
}

TEST(FallbackCarry, ComingBackRedisLearnsWhatWasAdmittedAloneNeverBelowZero) {
  fallback_carry c(60, 6000);
  c.answered({20, 2000}, t0);
  ASSERT_TRUE(c.deciding_alone());
  for (int i = 0; i < 8; ++i) c.admitted_alone(100);
  // 10 s later: the fleet had 20 + 10 requests, 2000 + 1000 tokens; 8 and 800 went alone.
  const auto back = c.coming_back(t0 + 10s);
  EXPECT_NEAR(back.requests, 22, 1e-6);
  EXPECT_NEAR(back.tokens, 2200, 1e-6);
  for (int i = 0; i < 100; ++i) c.admitted_alone(100);
  EXPECT_EQ(c.coming_back(t0 + 10s).requests, 0);
  EXPECT_EQ(c.coming_back(t0 + 10s).tokens, 0);
  // Redis answers: alone no more, and the next switch counts from zero.
  c.answered({5, 500}, t0 + 11s);
  EXPECT_FALSE(c.alone());
  ASSERT_TRUE(c.deciding_alone());
  EXPECT_NEAR(c.coming_back(t0 + 11s).requests, 5, 1e-6);
}

TEST(FallbackCarry, ARedisNeverHeardFromIsAssumedFullLessWhatWentAlone) {
  fallback_carry c(30, 0);
  EXPECT_FALSE(c.fleet_left(t0).has_value()) << "the local buckets then start as they are";
  ASSERT_TRUE(c.deciding_alone());
  for (int i = 0; i < 10; ++i) c.admitted_alone(0);
  EXPECT_NEAR(c.coming_back(t0).requests, 20, 1e-6);
  EXPECT_EQ(c.coming_back(t0).tokens, 0);
}
