// token_bucket on explicit steady_clock points (never a sleep): burst and refill, exact fractions,
// debt, refunds clamped at the limit, lowering to an upstream's remaining, learned limits, raised
// rates, waits for costs above the limit, and a clock going backwards.
#include "core/token_bucket.hpp"

#include <gtest/gtest.h>

#include <limits>

using namespace sluice;
using namespace std::chrono_literals;

namespace {

const token_bucket::time_point t0{std::chrono::hours(1000)};

}  // namespace

// Moved from unit/sim (the simulator's bucket, now this one: can_pay/pay are can_take/take); the
// assertions are unchanged.
TEST(TokenBucket, StartsFullAndRefillsAtLimitPerMinute) {
  token_bucket b(3, t0);
  EXPECT_EQ(b.remaining(), 3u);
  EXPECT_EQ(b.time_until_full(), 0s);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(b.can_take(1));
    b.take(1);
  }
  EXPECT_EQ(b.remaining(), 0u);
  EXPECT_FALSE(b.can_take(1));
  EXPECT_EQ(b.time_until(1), 20s) << "3 per minute: one every 20s";
  EXPECT_EQ(b.time_until_full(), 60s);

  b.refill(t0 + 19999ms);
  EXPECT_FALSE(b.can_take(1));
  EXPECT_EQ(b.time_until(1), 1ms);
  b.refill(t0 + 20s);
  EXPECT_TRUE(b.can_take(1));
  EXPECT_EQ(b.remaining(), 1u);
  EXPECT_EQ(b.time_until_full(), 40s);

  b.refill(t0 + 10min);  // long idle: capped at the limit, not beyond
  EXPECT_EQ(b.remaining(), 3u);
  EXPECT_FALSE(b.can_take(4)) << "a cost above the limit never fits";
  EXPECT_EQ(b.time_until(4), 0s) << "full already: the time until full";
}

TEST(TokenBucket, ContinuousRefillKeepsFractions) {
  // 7 per minute is not a whole number of microseconds per unit; 60 refills of 1s each must add
  // exactly 7 units, with no drift from rounding each step.
  token_bucket b(7, t0);
  b.take(7);
  for (int i = 1; i <= 60; ++i) b.refill(t0 + std::chrono::seconds(i) + 333ns * i);
  EXPECT_EQ(b.remaining(), 7u);
  token_bucket c(1000, t0);
  c.take(1000);
  c.refill(t0 + 1500ms);  // 1000/min = 16.67/s -> 25 units in 1.5s
  EXPECT_EQ(c.remaining(), 25u);
  EXPECT_EQ(c.time_until(26), 60ms);
  c.refill(t0 - 5s);  // a clock going backwards adds nothing and takes nothing
  EXPECT_EQ(c.remaining(), 25u);
}

TEST(TokenBucket, BurstThenTryTakeRefuses) {
  token_bucket b(5, t0);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(b.try_take(1)) << i;
  EXPECT_FALSE(b.try_take(1));
  EXPECT_EQ(b.remaining(), 0u) << "a refused try_take takes nothing";
  EXPECT_DOUBLE_EQ(b.level(), 0.0);
  b.refill(t0 + 12s);  // 5 per minute: one every 12s
  EXPECT_TRUE(b.try_take(1));
  EXPECT_FALSE(b.try_take(1));
  token_bucket big(10, t0);
  EXPECT_FALSE(big.try_take(11)) << "above the limit, even when full";
  EXPECT_EQ(big.remaining(), 10u);
}

TEST(TokenBucket, TakeGoesIntoDebtThatRefillsPayFirst) {
  token_bucket b(600, t0);  // 10 a second
  b.take(1000);             // a reservation above the limit, let through on a full bucket
  EXPECT_EQ(b.remaining(), 0u);
  EXPECT_DOUBLE_EQ(b.level(), -400.0);
  EXPECT_EQ(b.time_until(0), 40s) << "in debt, even a zero cost waits for it to be paid";
  EXPECT_EQ(b.time_until(1), 40s + 100ms);
  EXPECT_EQ(b.time_until_full(), 100s);
  b.refill(t0 + 30s);
  EXPECT_DOUBLE_EQ(b.level(), -100.0);
  EXPECT_FALSE(b.can_take(0));
  b.refill(t0 + 40s);
  EXPECT_TRUE(b.can_take(0));
  EXPECT_EQ(b.remaining(), 0u);
  // Saturates rather than wrapping, however absurd the cost.
  token_bucket deep(1, t0);
  deep.take(std::numeric_limits<std::uint64_t>::max());
  deep.take(std::numeric_limits<std::uint64_t>::max());
  EXPECT_LT(deep.level(), -1e10);
  EXPECT_GT(deep.time_until(1), duration(24h * 365 * 100));
  deep.refill(t0 + 1h);
  EXPECT_EQ(deep.remaining(), 0u);
}

TEST(TokenBucket, GiveBackIsClampedAtTheLimit) {
  token_bucket b(100, t0);
  b.take(30);
  b.give_back(10);
  EXPECT_EQ(b.remaining(), 80u);
  b.give_back(1000);
  EXPECT_EQ(b.remaining(), 100u) << "a refund never lifts the level above the limit";
  b.give_back(std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(b.remaining(), 100u);
  b.take(250);  // debt of 150
  b.give_back(200);
  EXPECT_DOUBLE_EQ(b.level(), 50.0) << "a refund pays debt first";
}

TEST(TokenBucket, LowerToFollowsAnUpstreamDownNeverUp) {
  token_bucket b(100, t0);
  b.lower_to(3);
  EXPECT_EQ(b.remaining(), 3u);
  b.lower_to(50);
  EXPECT_EQ(b.remaining(), 3u) << "a stale, higher remaining never raises the level";
  b.lower_to(1000);
  EXPECT_EQ(b.remaining(), 3u);
  b.take(10);  // debt of 7: lowering to 0 keeps the debt
  b.lower_to(0);
  EXPECT_DOUBLE_EQ(b.level(), -7.0);
}

TEST(TokenBucket, SetLimitKeepsTheLevelWithinTheNewLimit) {
  token_bucket b(100, t0);
  b.take(40);
  b.set_limit(50);
  EXPECT_EQ(b.limit(), 50u);
  EXPECT_EQ(b.remaining(), 50u) << "clamped to the lower limit";
  b.set_limit(200);
  EXPECT_EQ(b.remaining(), 50u) << "a higher limit does not fill the bucket";
  EXPECT_EQ(b.rate_per_minute(), 200u);
  EXPECT_EQ(b.time_until_full(), 45s) << "150 missing at 200 per minute";
  b.refill(t0 + 45s);
  EXPECT_EQ(b.remaining(), 200u);
  b.set_limit(0);
  EXPECT_EQ(b.limit(), 1u) << "limits are at least 1";
}

TEST(TokenBucket, SetRateRaisesTheRefillAndSetLimitResetsIt) {
  token_bucket b(600, t0);
  b.take(600);
  b.set_rate(36'000);  // the upstream said: full again in one second
  EXPECT_EQ(b.time_until_full(), 1s);
  b.refill(t0 + 500ms);
  EXPECT_EQ(b.remaining(), 300u);
  b.set_rate(10);  // slower than the limit's own rate: the limit's rate
  EXPECT_EQ(b.rate_per_minute(), 600u);
  b.set_rate(36'000);
  b.set_limit(600);
  EXPECT_EQ(b.rate_per_minute(), 600u) << "a (re)told limit means limit per minute again";
  b.set_rate(std::numeric_limits<std::uint64_t>::max());  // capped: a full bucket per microsecond
  b.give_back(600);
  b.take(600);
  EXPECT_EQ(b.time_until_full(), 1us);
  b.refill(t0 + 500ms + 1us);
  EXPECT_EQ(b.remaining(), 600u);
}

TEST(TokenBucket, TimeUntilForCostsAboveTheLimitIsTheTimeUntilFull) {
  token_bucket b(60, t0);  // one a second
  b.take(50);
  EXPECT_EQ(b.time_until(1000), 50s);
  EXPECT_EQ(b.time_until(1000), b.time_until_full());
  EXPECT_EQ(b.time_until(60), 50s);
  EXPECT_EQ(b.time_until(10), 0s);
  EXPECT_EQ(b.time_until(11), 1s);
  b.refill(t0 + 50s);
  EXPECT_EQ(b.time_until(1000), 0s) << "full: a debt-taking caller may go now";
  EXPECT_FALSE(b.can_take(1000)) << "and a refusing one still refuses";
}

TEST(TokenBucket, AClockGoingBackwardsAddsNothing) {
  token_bucket b(60, t0);
  b.take(60);
  b.refill(t0 - 1h);
  EXPECT_DOUBLE_EQ(b.level(), 0.0);
  b.refill(t0 + 10s);
  EXPECT_EQ(b.remaining(), 10u);
  b.refill(t0 + 5s);  // behind the last refill: nothing, and the next refill counts from t0 + 10s
  EXPECT_EQ(b.remaining(), 10u);
  b.refill(t0 + 11s);
  EXPECT_EQ(b.remaining(), 11u);
  b.refill(t0 + 11s);
  EXPECT_EQ(b.remaining(), 11u) << "standing still adds nothing either";
}

TEST(TokenBucket, SubMicrosecondStepsLoseNothing) {
  token_bucket b(60'000'000, t0);  // one unit per microsecond
  b.take(60'000'000);
  for (int i = 1; i <= 1000; ++i) b.refill(t0 + 250ns * i);  // 250us in quarter-microsecond steps
  EXPECT_EQ(b.remaining(), 250u);
  EXPECT_EQ(b.limit(), 60'000'000u);
  token_bucket huge(std::numeric_limits<std::uint64_t>::max(), t0);
  EXPECT_EQ(huge.limit(), token_bucket::max_limit);
  EXPECT_EQ(huge.remaining(), token_bucket::max_limit);
}
