// The flood checker on Messages API answers (--path /v1/messages): message_start first,
// message_stop last and nothing after it, each event's data typed as its name, an error event or
// body a failure; whole answers by type and content.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "loadgen/stream_check.hpp"

using namespace sluice::loadgen;

namespace {

std::string mev(const std::string& name, const std::string& type, const std::string& fields = "") {
  return "event: " + name + "\ndata: {\"type\":\"" + type + "\"" + (fields.empty() ? "" : "," + fields) + "}\n\n";
}
std::string mev(const std::string& name) { return mev(name, name); }

const std::string start = mev("message_start", "message_start", R"("message":{"id":"msg_1","content":[]})");
const std::string deltas = mev("content_block_start") + mev("content_block_delta", "content_block_delta", R"("delta":{"type":"text_delta","text":"Hi"})") +
                           mev("content_block_delta") + mev("content_block_stop") + mev("message_delta");
const std::string stop = mev("message_stop");

struct messages_check_test : ::testing::Test {
  std::unique_ptr<json_scratch> scratch = std::make_unique<json_scratch>();
  std::unique_ptr<stream_check> c;
  verdict run(const std::string& body, bool streaming = true) {
    c = std::make_unique<stream_check>(streaming, *scratch, nullptr, wire::messages);
    const auto t0 = clock::now();
    for (std::size_t i = 0; i < body.size(); i += 5)  // odd splits, across event boundaries
      if (!c->feed(std::string_view(body).substr(i, 5), t0)) break;
    return c->finish(true);
  }
};

}  // namespace

TEST_F(messages_check_test, a_good_stream_is_ok_and_its_deltas_are_content) {
  EXPECT_EQ(run(start + mev("ping") + deltas + stop), verdict::ok) << c->reason();
  EXPECT_EQ(c->chunks(), 8u);
  EXPECT_TRUE(c->saw_done());
  EXPECT_EQ(wire_of_path("/v1/messages"), wire::messages);
}

TEST_F(messages_check_test, order_and_names_are_checked) {
  EXPECT_EQ(run(deltas + stop), verdict::malformed) << "no message_start first";
  EXPECT_EQ(run(start + start + stop), verdict::malformed);
  EXPECT_EQ(run(start + stop + mev("ping")), verdict::malformed) << "after message_stop";
  EXPECT_EQ(run(start + mev("content_block_delta", "content_block_stop") + stop), verdict::malformed);
  EXPECT_EQ(run(start + "data: [DONE]\n\n"), verdict::malformed);
  EXPECT_EQ(run(start + deltas), verdict::truncated) << "no message_stop";
}

TEST_F(messages_check_test, an_error_event_fails_the_stream) {
  EXPECT_EQ(run(start + mev("error", "error", R"("error":{"type":"api_error","message":"x"})")), verdict::error_event);
}

TEST_F(messages_check_test, whole_answers) {
  EXPECT_EQ(run(R"({"type":"message","content":[{"type":"text","text":"Hi"}]})", false), verdict::ok) << c->reason();
  EXPECT_EQ(run(R"({"type":"error","error":{"type":"api_error","message":"x"}})", false), verdict::error_event);
  EXPECT_EQ(run(R"({"type":"message"})", false), verdict::malformed);
}
