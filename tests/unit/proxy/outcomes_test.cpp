// How an ending becomes its labels and its x-should-retry: every error code has an answer, and a
// schema violation is never worth a retry while other protocol failures are.
#include <gtest/gtest.h>

#include "http/error_response.hpp"
#include "proxy/outcomes.hpp"

using namespace sluice;
using namespace sluice::proxy;

TEST(should_retry, sluice_errors_by_what_a_retry_can_fix) {
  auto retry = [](errc c, std::string api_code = {}) {
    error e = error::make(c, "x");
    e.api_code = std::move(api_code);
    return should_retry_value(http::map_error(e).status, &e);
  };
  for (errc c : {errc::bad_request, errc::unauthorized, errc::not_found, errc::method_not_allowed,
                 errc::payload_too_large, errc::header_too_large, errc::upstream_auth})
    EXPECT_FALSE(retry(c)) << to_string(c);
  for (errc c : {errc::request_timeout, errc::rate_limited, errc::overloaded, errc::upstream_connect,
                 errc::upstream_timeout, errc::upstream_protocol, errc::internal})
    EXPECT_TRUE(retry(c)) << to_string(c);
  EXPECT_FALSE(retry(errc::upstream_protocol, "schema_violation"));
  error v = error::make(errc::upstream_protocol, "x", "/a");
  v.api_code = "schema_violation";
  EXPECT_EQ(reason_of(v), "schema_violation");
}

TEST(should_retry, an_upstream_status_by_the_status) {
  error e = error::make(errc::upstream_status, "x");
  for (unsigned s : {400u, 401u, 403u, 404u, 422u}) {
    e.upstream_status = static_cast<int>(s);
    EXPECT_FALSE(should_retry_value(s, &e)) << s;
    EXPECT_FALSE(should_retry_value(s, nullptr)) << s;
  }
  for (unsigned s : {408u, 409u, 429u, 500u, 502u, 503u, 504u}) {
    e.upstream_status = static_cast<int>(s);
    EXPECT_TRUE(should_retry_value(s, &e)) << s;
    EXPECT_TRUE(should_retry_value(s, nullptr)) << s;
  }
  EXPECT_EQ(should_retry_text(true), "true");
  EXPECT_EQ(should_retry_text(false), "false");
}

TEST(responses_error_event, carries_the_responses_members_and_the_nested_error) {
  error e = error::make(errc::upstream_timeout, "upstream stalled");
  const std::string ev = http::responses_error_event(e, 17);
  EXPECT_EQ(ev,
            R"({"type":"error","code":"upstream_timeout","message":"upstream stalled","param":null,"sequence_number":17,)"
            R"("error":{"message":"upstream stalled","type":"upstream_error","param":null,"code":"upstream_timeout"}})");
}

TEST(admission_refusals, every_refusal_has_its_reason_and_a_retryable_503) {
  using admission::refusal;
  EXPECT_EQ(reject_reason_of(refusal::queue_full), obs::reject_reason::queue_full);
  EXPECT_EQ(reject_reason_of(refusal::key_queue_full), obs::reject_reason::key_queue_full);
  EXPECT_EQ(reject_reason_of(refusal::queue_timeout), obs::reject_reason::queue_timeout);
  EXPECT_EQ(reject_reason_of(refusal::memory), obs::reject_reason::memory);
  EXPECT_EQ(reject_reason_of(refusal::draining), obs::reject_reason::draining);
  EXPECT_EQ(obs::to_string(obs::reject_reason::key_queue_full), "key_queue_full");
  for (auto r : {refusal::queue_full, refusal::key_queue_full, refusal::queue_timeout, refusal::memory,
                 refusal::draining}) {
    const error e = admission_error(r);
    EXPECT_EQ(http::map_error(e).status, 503u) << admission::to_string(r);
    EXPECT_TRUE(should_retry_value(503, &e)) << admission::to_string(r);
  }
  // The key's own share of the queue is not a 429: the gateway is at capacity, the key is not over
  // a limit of its own, and its message says so.
  EXPECT_NE(admission_error(refusal::key_queue_full).message, admission_error(refusal::queue_full).message);
}
