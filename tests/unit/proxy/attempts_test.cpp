// The attempt loop's pure rules: what an attempt's outcome means for the upstream's circuit and
// budget, and whether the request tries again.
#include <gtest/gtest.h>

#include "proxy/attempts.hpp"

using namespace sluice;
using namespace sluice::proxy;

namespace {
attempt_outcome answered(unsigned status, bool sse = false) {
  attempt_outcome o;
  o.kind = attempt_kind::answered;
  o.status = status;
  o.sse = sse;
  return o;
}
attempt_outcome send_failed(errc c, bool retryable) {
  attempt_outcome o;
  o.kind = attempt_kind::send_failed;
  o.failure = c;
  o.retryable = retryable;
  return o;
}
}  // namespace

TEST(classify_attempt, final_answers_are_not_retried) {
  for (unsigned s : {200u, 201u, 400u, 401u, 404u, 422u}) {
    auto v = classify_attempt(answered(s));
    EXPECT_EQ(v.health, upstream_health::succeeded) << s;
    EXPECT_FALSE(v.retry) << s;
    EXPECT_FALSE(v.refund) << s;
  }
}

TEST(classify_attempt, a_stream_reports_its_health_at_its_end) {
  auto v = classify_attempt(answered(200, true));
  EXPECT_EQ(v.health, upstream_health::pending);
  EXPECT_FALSE(v.retry);
}

TEST(classify_attempt, rate_limited_is_alive_and_retried) {
  auto v = classify_attempt(answered(429));
  EXPECT_EQ(v.health, upstream_health::succeeded);
  ASSERT_TRUE(v.retry);
  EXPECT_EQ(*v.retry, retry_reason::status_429);
}

TEST(classify_attempt, server_errors_count_against_the_upstream_and_are_retried) {
  for (unsigned s : {500u, 502u, 503u, 504u}) {
    auto v = classify_attempt(answered(s));
    EXPECT_EQ(v.health, upstream_health::failed) << s;
    ASSERT_TRUE(v.retry) << s;
    EXPECT_EQ(*v.retry, retry_reason::status_5xx);
  }
}

TEST(classify_attempt, failed_sends_by_cause) {
  auto connect = classify_attempt(send_failed(errc::upstream_connect, true));
  EXPECT_EQ(connect.health, upstream_health::failed);
  EXPECT_TRUE(connect.refund) << "a request that never reached the upstream gets its budget back";
  ASSERT_TRUE(connect.retry);
  EXPECT_EQ(*connect.retry, retry_reason::connect);

  auto timeout = classify_attempt(send_failed(errc::upstream_timeout, true));
  EXPECT_FALSE(timeout.refund) << "a timed-out request may have reached it";
  ASSERT_TRUE(timeout.retry);
  EXPECT_EQ(*timeout.retry, retry_reason::timeout);

  auto protocol = classify_attempt(send_failed(errc::upstream_protocol, false));
  EXPECT_EQ(protocol.health, upstream_health::failed);
  EXPECT_FALSE(protocol.retry) << "the error said no retry can fix it";
}

TEST(classify_attempt, a_body_cut_short_is_retried) {
  attempt_outcome o;
  o.kind = attempt_kind::body_failed;
  o.failure = errc::upstream_protocol;
  auto v = classify_attempt(o);
  EXPECT_EQ(v.health, upstream_health::failed);
  ASSERT_TRUE(v.retry);
  EXPECT_EQ(*v.retry, retry_reason::protocol);
  o.failure = errc::upstream_timeout;
  EXPECT_EQ(*classify_attempt(o).retry, retry_reason::timeout);
}

TEST(classify_attempt, a_cancelled_attempt_says_nothing_about_the_upstream) {
  attempt_outcome o;
  o.kind = attempt_kind::cancelled;
  auto v = classify_attempt(o);
  EXPECT_EQ(v.health, upstream_health::pending);
  EXPECT_FALSE(v.retry);
  EXPECT_FALSE(v.refund);
}

TEST(should_retry, within_attempts_deadline_and_drain) {
  const auto retryable = classify_attempt(answered(503));
  const auto final_answer = classify_attempt(answered(200));
  retry_window w{1, 3, false, false};
  EXPECT_TRUE(should_retry(retryable, w));
  EXPECT_FALSE(should_retry(final_answer, w));
  w.attempts = 3;
  EXPECT_FALSE(should_retry(retryable, w)) << "max-attempts reached";
  w = {1, 3, true, false};
  EXPECT_FALSE(should_retry(retryable, w)) << "past the request deadline";
  w = {1, 3, false, true};
  EXPECT_FALSE(should_retry(retryable, w)) << "the drain is cutting";
}
