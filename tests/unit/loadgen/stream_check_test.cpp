#include "loadgen/stream_check.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>

using namespace sluice::loadgen;
using namespace std::chrono_literals;

namespace {

std::string chunk(const std::string& content) {
  return "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" + content + "\"}}]}\n\n";
}
const std::string role = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n";
const std::string done = "data: [DONE]\n\n";

struct stream_check_test : ::testing::Test {
  std::unique_ptr<json_scratch> scratch = std::make_unique<json_scratch>();
  std::unique_ptr<histogram> gaps = std::make_unique<histogram>();
  clock::time_point t0 = clock::now();

  // Feeds `body` one byte at a time (the worst split) at consecutive milliseconds.
  verdict feed_bytewise(stream_check& c, const std::string& body, bool clean = true) {
    for (std::size_t i = 0; i < body.size(); ++i)
      if (!c.feed(std::string_view(body).substr(i, 1), t0 + std::chrono::milliseconds(i))) break;
    return c.finish(clean);
  }
};

}  // namespace

TEST_F(stream_check_test, good_stream_is_ok_and_counts_chunks) {
  stream_check c(true, *scratch, gaps.get());
  const std::string body = role + chunk("Hel") + ": keep-alive comment\n\n" + chunk("lo") + done;
  EXPECT_EQ(feed_bytewise(c, body), verdict::ok) << c.reason();
  EXPECT_EQ(c.chunks(), 3u);
  EXPECT_TRUE(c.saw_done());
  EXPECT_EQ(gaps->count(), 2u);
}

TEST_F(stream_check_test, ttft_is_the_first_chunk_with_content) {
  stream_check c(true, *scratch, gaps.get());
  c.feed(role, t0);
  c.feed(chunk(""), t0 + 5ms);
  c.feed(chunk("x"), t0 + 9ms);
  c.feed(done, t0 + 10ms);
  EXPECT_EQ(c.finish(true), verdict::ok);
  ASSERT_TRUE(c.first_token());
  EXPECT_EQ(*c.first_token() - t0, 9ms);
  EXPECT_EQ(gaps->max(), 5'000'000u);
}

TEST_F(stream_check_test, ttft_falls_back_to_the_first_chunk) {
  stream_check c(true, *scratch);
  c.feed(role, t0 + 3ms);
  c.feed(done, t0 + 4ms);
  EXPECT_EQ(c.finish(true), verdict::ok);
  ASSERT_TRUE(c.first_token());
  EXPECT_EQ(*c.first_token() - t0, 3ms);
}

TEST_F(stream_check_test, legacy_completions_text_counts_as_content) {
  stream_check c(true, *scratch);
  c.feed("data: {\"choices\":[{\"text\":\"\"}]}\n\n", t0 + 1ms);
  c.feed("data: {\"choices\":[{\"text\":\"hi\"}]}\n\n", t0 + 2ms);
  EXPECT_EQ(*c.first_token() - t0, 2ms);
}

TEST_F(stream_check_test, missing_done_is_truncated) {
  stream_check c(true, *scratch);
  EXPECT_EQ(feed_bytewise(c, role + chunk("a")), verdict::truncated);
}

TEST_F(stream_check_test, cut_inside_an_event_is_truncated) {
  stream_check c(true, *scratch);
  EXPECT_EQ(feed_bytewise(c, role + "data: {\"choi"), verdict::truncated);
}

TEST_F(stream_check_test, done_without_a_clean_end_is_truncated) {
  stream_check c(true, *scratch);
  EXPECT_EQ(feed_bytewise(c, role + done, /*clean=*/false), verdict::truncated);
}

TEST_F(stream_check_test, bad_json_is_malformed) {
  stream_check c(true, *scratch);
  EXPECT_EQ(feed_bytewise(c, role + "data: {\"choices\": [\n\n" + done), verdict::malformed);
  EXPECT_NE(c.reason().find("not JSON"), std::string::npos);
}

TEST_F(stream_check_test, event_after_done_is_malformed) {
  stream_check c(true, *scratch);
  EXPECT_EQ(feed_bytewise(c, role + done + chunk("late")), verdict::malformed);
}

TEST_F(stream_check_test, oversized_event_is_malformed) {
  stream_check c(true, *scratch);
  std::string huge = "data: \"" + std::string(stream_check::max_event_bytes, 'x') + "\"\n\n";
  c.feed(huge, t0);
  EXPECT_EQ(c.finish(true), verdict::malformed);
}

TEST_F(stream_check_test, in_band_error_is_its_own_kind) {
  stream_check c(true, *scratch);
  const std::string err = "data: {\"error\":{\"message\":\"upstream died\",\"type\":\"server_error\"}}\n\n";
  EXPECT_EQ(feed_bytewise(c, role + err + done), verdict::error_event);
  EXPECT_EQ(c.chunks(), 1u);
}

TEST_F(stream_check_test, error_event_type_is_an_error) {
  stream_check c(true, *scratch);
  EXPECT_EQ(feed_bytewise(c, role + "event: error\ndata: {\"message\":\"x\"}\n\n"), verdict::error_event);
}

TEST_F(stream_check_test, verdict_is_final) {
  stream_check c(true, *scratch);
  EXPECT_FALSE(c.feed("data: nope\n\n", t0));
  EXPECT_FALSE(c.feed(done, t0));
  EXPECT_EQ(c.finish(true), verdict::malformed);
}

TEST_F(stream_check_test, scratch_is_reused_across_many_events) {
  // Thousands of events through one scratch: the monotonic buffer must be rewound each time.
  stream_check c(true, *scratch);
  std::string body;
  for (int i = 0; i < 5000; ++i) body += chunk("token" + std::to_string(i));
  body += done;
  c.feed(body, t0);
  EXPECT_EQ(c.finish(true), verdict::ok) << c.reason();
  EXPECT_EQ(c.chunks(), 5000u);
}

TEST_F(stream_check_test, non_stream_body_needs_choices) {
  {
    stream_check c(false, *scratch);
    EXPECT_EQ(feed_bytewise(c, R"({"id":"x","choices":[{"message":{"content":"hi"}}]})"), verdict::ok);
    ASSERT_TRUE(c.first_token());
    EXPECT_EQ(*c.first_token(), t0);
  }
  {
    stream_check c(false, *scratch);
    EXPECT_EQ(feed_bytewise(c, R"({"id":"x"})"), verdict::malformed);
  }
  {
    stream_check c(false, *scratch);
    EXPECT_EQ(feed_bytewise(c, R"({"error":{"message":"no"}})"), verdict::error_event);
  }
  {
    stream_check c(false, *scratch);
    EXPECT_EQ(feed_bytewise(c, R"({"choices":[)"), verdict::malformed);
  }
  {
    stream_check c(false, *scratch);
    EXPECT_EQ(feed_bytewise(c, R"({"choices":[]})", /*clean=*/false), verdict::truncated);
  }
}
