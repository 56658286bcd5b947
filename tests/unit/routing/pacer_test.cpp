// pacer on a manual clock: buckets seeded from config refill over a minute, reservations, refunds,
// settling against actual usage, resync from x-ratelimit headers, retry-after blocks; reading
// headers; full-jitter bounds. (The reset duration parser's cases are in unit/core.)
#include <gtest/gtest.h>

#include <boost/beast/http/fields.hpp>

#include "routing/headers.hpp"
#include "routing/pacer.hpp"

using namespace sluice;
using namespace sluice::routing;
using namespace std::chrono_literals;

TEST(Pacer, RequestBucketRefillsOverAMinute) {
  auto t = steady_clock::now();
  pacer p(60, 0, t);  // 60 rpm: one a second
  for (int i = 0; i < 60; ++i) ASSERT_FALSE(p.try_reserve(0, t)) << i;
  auto wait = p.try_reserve(0, t);
  ASSERT_TRUE(wait);
  EXPECT_NEAR(std::chrono::duration<double>(*wait).count(), 1.0, 0.01);
  EXPECT_TRUE(p.wait_time(0, t + 500ms));
  EXPECT_FALSE(p.wait_time(0, t + 1s));
  EXPECT_FALSE(p.try_reserve(0, t + 1s));
  EXPECT_TRUE(p.try_reserve(0, t + 1s));
}

TEST(Pacer, NoLimitsMeansNoWaiting) {
  auto t = steady_clock::now();
  pacer p(0, 0, t);
  for (int i = 0; i < 10000; ++i) ASSERT_FALSE(p.try_reserve(1000000, t));
  EXPECT_FALSE(p.has_token_budget());
}

TEST(Pacer, TokenBucketWaitsForTheCostAndSettles) {
  auto t = steady_clock::now();
  pacer p(0, 6000, t);  // 100 tokens per second
  EXPECT_TRUE(p.has_token_budget());
  EXPECT_FALSE(p.try_reserve(5000, t));
  auto wait = p.try_reserve(2000, t);  // 1000 left: 1000 more needed = 10 s
  ASSERT_TRUE(wait);
  EXPECT_NEAR(std::chrono::duration<double>(*wait).count(), 10.0, 0.01);
  p.settle(5000, 1000, t);  // it used only 1000: 4000 come back
  EXPECT_FALSE(p.try_reserve(2000, t));
  auto snap = p.snapshot(t);
  EXPECT_NEAR(snap.tokens_available, 3000, 1);
}

TEST(Pacer, OversizedRequestWaitsForAFullBucketOnly) {
  auto t = steady_clock::now();
  pacer p(0, 600, t);
  ASSERT_FALSE(p.try_reserve(100, t));
  auto wait = p.try_reserve(5000, t);  // more than the whole limit: wait until full, then go
  ASSERT_TRUE(wait);
  EXPECT_NEAR(std::chrono::duration<double>(*wait).count(), 10.0, 0.01);
  EXPECT_FALSE(p.try_reserve(5000, t + 10s));
  EXPECT_TRUE(p.try_reserve(1, t + 10s)) << "the bucket went negative";
}

TEST(Pacer, RefundGivesTheReservationBack) {
  auto t = steady_clock::now();
  pacer p(2, 0, t);
  ASSERT_FALSE(p.try_reserve(0, t));
  ASSERT_FALSE(p.try_reserve(0, t));
  ASSERT_TRUE(p.try_reserve(0, t));
  p.refund(0, t);
  EXPECT_FALSE(p.try_reserve(0, t));
}

TEST(Pacer, HeadersLowerTheLevelAndTeachUnknownLimits) {
  auto t = steady_clock::now();
  pacer p(0, 0, t);
  ratelimit_headers h;
  h.limit_requests = 100;
  h.remaining_requests = 3;
  h.limit_tokens = 1000;
  h.remaining_tokens = 900;
  p.observe(h, t);
  EXPECT_TRUE(p.has_token_budget());
  auto snap = p.snapshot(t);
  EXPECT_EQ(snap.requests_limit, 100);
  EXPECT_NEAR(snap.requests_available, 3, 1e-9);
  EXPECT_NEAR(snap.tokens_available, 900, 1e-9);
  for (int i = 0; i < 3; ++i) ASSERT_FALSE(p.try_reserve(10, t));
  EXPECT_TRUE(p.try_reserve(10, t));
  // A stale, higher remaining never raises what sluice counted.
  h.remaining_requests = 50;
  p.observe(h, t);
  EXPECT_TRUE(p.try_reserve(10, t));
}

TEST(Pacer, RetryAfterBlocksUntilItPasses) {
  auto t = steady_clock::now();
  pacer p(0, 0, t);
  ratelimit_headers h;
  h.retry_after = 1500ms;
  p.observe(h, t);
  auto w = p.wait_time(0, t);
  ASSERT_TRUE(w);
  EXPECT_EQ(*w, duration(1500ms));
  EXPECT_TRUE(p.try_reserve(0, t + 1499ms));
  EXPECT_FALSE(p.try_reserve(0, t + 1500ms));
  p.block_until(t + 3s);
  EXPECT_TRUE(p.wait_time(0, t + 2s));
}

TEST(Headers, ReadsOpenAIRateLimitHeaders) {
  boost::beast::http::fields f;
  f.set("x-ratelimit-limit-requests", "500");
  f.set("x-ratelimit-remaining-requests", "499");
  f.set("x-ratelimit-reset-requests", "120ms");
  f.set("x-ratelimit-limit-tokens", "30000");
  f.set("x-ratelimit-remaining-tokens", "29000");
  f.set("x-ratelimit-reset-tokens", "2s");
  f.set("retry-after", "3");
  f.set("retry-after-ms", "2500");
  auto h = read_ratelimit_headers(f);
  EXPECT_EQ(h.limit_requests, 500);
  EXPECT_EQ(h.remaining_requests, 499);
  EXPECT_EQ(h.reset_requests, duration(120ms));
  EXPECT_EQ(h.limit_tokens, 30000);
  EXPECT_EQ(h.remaining_tokens, 29000);
  EXPECT_EQ(h.reset_tokens, duration(2s));
  EXPECT_EQ(h.retry_after, duration(2500ms)) << "retry-after-ms is the more precise one";
  f.erase("retry-after-ms");
  EXPECT_EQ(read_ratelimit_headers(f).retry_after, duration(3s));
  f.set("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT");
  EXPECT_FALSE(read_ratelimit_headers(f).retry_after);
  boost::beast::http::fields none;
  EXPECT_FALSE(read_ratelimit_headers(none).any());
  boost::beast::http::fields junk;
  junk.set("x-ratelimit-remaining-requests", "-4");
  junk.set("retry-after", "99999999");
  auto j = read_ratelimit_headers(junk);
  EXPECT_FALSE(j.remaining_requests);
  EXPECT_EQ(j.retry_after, duration(1h)) << "capped";
}

TEST(Backoff, FullJitterStaysWithinTheExponentialCeiling) {
  std::minstd_rand rng(7);
  for (unsigned retry = 0; retry < 8; ++retry) {
    duration ceiling = std::min<duration>(duration(100ms) * (1u << retry), duration(1s));
    duration lo = ceiling, hi = duration::zero();
    for (int i = 0; i < 2000; ++i) {
      auto d = full_jitter(100ms, 1s, retry, rng);
      ASSERT_GE(d, duration::zero());
      ASSERT_LE(d, ceiling);
      lo = std::min(lo, d);
      hi = std::max(hi, d);
    }
    EXPECT_LT(lo, ceiling / 10) << "jitter reaches near zero";
    EXPECT_GT(hi, ceiling * 9 / 10) << "and near the ceiling";
  }
}

TEST(Pacer, ResetHeaderSpeedsUpTheRefill) {
  auto t = steady_clock::now();
  pacer p(0, 0, t);
  ratelimit_headers h;
  h.limit_requests = 600;  // 10 a second by the minute rule
  h.remaining_requests = 0;
  h.reset_requests = 1s;   // but full again in one second
  p.observe(h, t);
  EXPECT_TRUE(p.wait_time(0, t));
  EXPECT_NEAR(p.snapshot(t + 500ms).requests_available, 300, 1);
  EXPECT_NEAR(p.snapshot(t + 1s).requests_available, 600, 1);
  // A reset slower than the minute rule never slows the refill below limit/60.
  h.remaining_requests = 0;
  h.reset_requests = 10min;
  pacer q(0, 0, t);
  q.observe(h, t);
  EXPECT_NEAR(q.snapshot(t + 1s).requests_available, 10, 0.01);
}

TEST(Headers, AnthropicsRateLimitHeadersResetAtATimeAndReadAsTheTimeLeft) {
  boost::beast::http::fields f;
  const auto now = std::chrono::system_clock::time_point(std::chrono::seconds(1'796'600'000));  // 2026-12-05
  f.set("anthropic-ratelimit-requests-limit", "50");
  f.set("anthropic-ratelimit-requests-remaining", "49");
  f.set("anthropic-ratelimit-requests-reset", sluice::format_rfc3339(now + 2s));
  f.set("anthropic-ratelimit-tokens-limit", "40000");
  f.set("anthropic-ratelimit-tokens-remaining", "39000");
  f.set("anthropic-ratelimit-tokens-reset", sluice::format_rfc3339(now - 5s));
  f.set("x-ratelimit-remaining-requests", "1");  // not this upstream's dialect: ignored
  f.set("retry-after", "4");
  auto h = read_anthropic_ratelimit_headers(f, now);
  EXPECT_EQ(h.limit_requests, 50);
  EXPECT_EQ(h.remaining_requests, 49);
  EXPECT_EQ(h.reset_requests, duration(2s));
  EXPECT_EQ(h.limit_tokens, 40000);
  EXPECT_EQ(h.remaining_tokens, 39000);
  EXPECT_EQ(h.reset_tokens, duration::zero()) << "a reset already past";
  EXPECT_EQ(h.retry_after, duration(4s));
  f.set("anthropic-ratelimit-requests-reset", "in two seconds");
  EXPECT_FALSE(read_anthropic_ratelimit_headers(f, now).reset_requests);
  f.set("anthropic-ratelimit-requests-reset", sluice::format_rfc3339(now + std::chrono::hours(24 * 30)));
  EXPECT_FALSE(read_anthropic_ratelimit_headers(f, now).reset_requests) << "a month away is garbage";
  EXPECT_EQ(read_ratelimit_headers(f).remaining_requests, 1) << "and the OpenAI reader reads only its own";
}
