// limit-rpm / limit-tpm with an injected clock: every time below is an explicit steady_clock point,
// never a sleep. (The bucket's own arithmetic is tested with core's token_bucket, in unit/core.)
#include "core/rfc3339.hpp"
#include "sim/rate_limit.hpp"

#include <gtest/gtest.h>

#include <map>

using namespace sluice;
using namespace std::chrono_literals;

namespace {

const sim::steady_time t0{std::chrono::hours(1000)};

std::map<std::string, std::string> header_map(const sim::rate_decision& d, sim::api kind = sim::api::chat) {
  std::map<std::string, std::string> m;
  for (auto& [k, v] : sim::ratelimit_headers(d, kind)) m[std::string(k)] = v;
  return m;
}

}  // namespace

TEST(SimRateLimiter, ChargesBothBucketsOrNeither) {
  sim::rate_limiter rl(3, 100, t0);
  ASSERT_TRUE(rl.enabled());
  auto a = rl.take(60, t0);
  ASSERT_TRUE(a.allowed);
  ASSERT_TRUE(a.requests && a.tokens);
  EXPECT_EQ(a.requests->remaining, 2u);
  EXPECT_EQ(a.tokens->remaining, 40u);
  EXPECT_EQ(a.tokens->reset, 36s) << "60 tokens at 100/min";

  auto b = rl.take(60, t0 + 1s);  // 40 + 1.67 tokens: not enough
  EXPECT_FALSE(b.allowed);
  EXPECT_EQ(b.exceeded, "tokens");
  EXPECT_FALSE(b.too_large);
  EXPECT_EQ(b.requests->remaining, 2u) << "a refusal charges no request";
  EXPECT_EQ(b.tokens->remaining, 41u);
  EXPECT_EQ(b.retry_after, 11s) << "18.33 tokens missing at 100/min";

  auto c = rl.take(10, t0 + 1s);
  EXPECT_TRUE(c.allowed);
  EXPECT_EQ(c.requests->remaining, 1u);
}

TEST(SimRateLimiter, RequestsLimitAndLongerWaitDecide) {
  sim::rate_limiter rl(2, 0, t0);
  EXPECT_TRUE(rl.take(1'000'000, t0).allowed) << "no token limit: any cost";
  EXPECT_TRUE(rl.take(1, t0).allowed);
  auto d = rl.take(1, t0 + 5s);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.exceeded, "requests");
  EXPECT_EQ(d.retry_after, 25s) << "one request every 30s; 5s of it passed";
  EXPECT_FALSE(d.tokens.has_value()) << "headers only for limits that are on";
  auto h = header_map(d);
  EXPECT_EQ(h.count("x-ratelimit-limit-tokens"), 0u);
  EXPECT_EQ(h["x-ratelimit-limit-requests"], "2");
  EXPECT_EQ(h["x-ratelimit-remaining-requests"], "0");
  EXPECT_EQ(h["x-ratelimit-reset-requests"], "55s");

  // Both short: the longer wait is the one named.
  sim::rate_limiter both(1, 60, t0);
  ASSERT_TRUE(both.take(60, t0).allowed);
  auto e = both.take(30, t0 + 40s);  // requests: 20s more; tokens: 40 refilled, ready
  EXPECT_EQ(e.exceeded, "requests");
  auto f = both.take(59, t0 + 50s);  // requests: 10s; tokens: 9s more for 59 (50 refilled)
  EXPECT_EQ(f.exceeded, "requests");
  EXPECT_EQ(f.retry_after, 10s);
  auto g = both.take(60, t0 + 55s);  // requests: 5s; tokens: 5s... equal: requests named
  EXPECT_EQ(g.exceeded, "requests");
  EXPECT_EQ(g.retry_after, 5s);
}

TEST(SimRateLimiter, TooLargeNeverPassesAndNamesIt) {
  sim::rate_limiter rl(0, 100, t0);
  auto d = rl.take(150, t0);
  EXPECT_FALSE(d.allowed);
  EXPECT_TRUE(d.too_large);
  EXPECT_EQ(d.exceeded, "tokens");
  EXPECT_EQ(d.retry_after, 1ms) << "the bucket is full: the smallest pause, never zero";
  EXPECT_NE(sim::rate_limit_message(d).find("Request too large for tokens per min (TPM): Limit 100, Requested 150"),
            std::string::npos)
      << sim::rate_limit_message(d);
  EXPECT_FALSE(rl.take(150, t0 + 1h).allowed);
}

TEST(SimRateLimiter, MessagesAndRounding) {
  sim::rate_limiter rl(3, 0, t0);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(rl.take(1, t0).allowed);
  auto d = rl.take(1, t0 + 500us);
  ASSERT_FALSE(d.allowed);
  EXPECT_EQ(d.retry_after, 19999500us);
  EXPECT_EQ(sim::ceil_ms(d.retry_after), 20000u);
  EXPECT_EQ(sim::ceil_seconds(d.retry_after), 20u);
  EXPECT_EQ(sim::ceil_ms(1ns), 1u);
  EXPECT_EQ(sim::ceil_seconds(1001ms), 2u);
  EXPECT_EQ(sim::ceil_seconds(0s), 0u);
  EXPECT_EQ(sim::rate_limit_message(d),
            "Rate limit reached for requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s.");
  EXPECT_EQ(header_map(d)["x-ratelimit-reset-requests"], "1m0s") << "59.9995s rounds up to whole ms";
}

TEST(SimRateLimiter, TheMessagesRouteSaysItsLimitsAsAnthropicDoes) {
  sim::rate_limiter rl(3, 0, t0);
  auto a = rl.take(10, t0);
  ASSERT_TRUE(a.allowed);
  auto m = header_map(a, sim::api::messages);
  EXPECT_EQ(m["anthropic-ratelimit-requests-limit"], "3");
  EXPECT_EQ(m["anthropic-ratelimit-requests-remaining"], "2");
  const auto reset = sluice::parse_rfc3339(m["anthropic-ratelimit-requests-reset"]);
  ASSERT_TRUE(reset) << m["anthropic-ratelimit-requests-reset"];
  EXPECT_GT(*reset, std::chrono::system_clock::now()) << "a reset still to come, as a time";
  EXPECT_EQ(m.count("x-ratelimit-limit-requests"), 0u);
}
