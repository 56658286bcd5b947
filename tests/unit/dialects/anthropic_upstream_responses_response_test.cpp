// A whole Messages answer → a Responses `response` object (an Anthropic upstream behind
// /v1/responses): output items, status, usage, refusals of what is not a message; and the same
// answer streamed ends with the same response object.
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "dialects/anthropic_upstream_responses_response.hpp"
#include "sse/parser.hpp"

namespace anthropic_upstream_responses_response_test {

namespace json = boost::json;
using sluice::dialects::response_of_message;

const sluice::dialects::response_start_info info{"resp_00112233445566778899aabbccddeeff", "asked-model", 1700000000};

json::object message_with(std::string_view members) { return json::parse(R"({"type":"message",)" + std::string(members) + "}").as_object(); }

TEST(AnthropicUpstreamResponsesResponse, ThinkingTextAndToolUseBecomeOutputItems) {
  auto r = response_of_message(message_with(R"("id":"msg_01","role":"assistant","model":"claude-opus-4-5",
    "content":[{"type":"thinking","thinking":"Think.","signature":"EqQB"},{"type":"redacted_thinking","data":"x"},
      {"type":"text","text":"Checking."},{"type":"tool_use","id":"toolu_a","name":"get_weather","input":{"city":"Paris"}},
      {"type":"tool_use","id":"toolu_b","name":"now","input":{}}],
    "stop_reason":"tool_use","stop_sequence":null,
    "usage":{"input_tokens":4,"cache_read_input_tokens":16,"cache_creation_input_tokens":2,"output_tokens":7})"), info);
  ASSERT_TRUE(static_cast<bool>(r));
  EXPECT_EQ(r->at("output"), json::parse(R"([
    {"id":"rs_00112233445566778899aabbccddeeff_0","type":"reasoning","status":"completed","summary":[],"content":[{"type":"reasoning_text","text":"Think."}]},
    {"id":"msg_00112233445566778899aabbccddeeff_1","type":"message","status":"completed","role":"assistant",
     "content":[{"type":"output_text","annotations":[],"text":"Checking."}]},
    {"id":"fc_00112233445566778899aabbccddeeff_2","type":"function_call","status":"completed","arguments":"{\"city\":\"Paris\"}",
     "call_id":"toolu_a","name":"get_weather"},
    {"id":"fc_00112233445566778899aabbccddeeff_3","type":"function_call","status":"completed","arguments":"{}","call_id":"toolu_b","name":"now"}])"));
  EXPECT_EQ(r->at("id"), json::value(info.id));
  EXPECT_EQ(r->at("object"), "response");
  EXPECT_EQ(r->at("created_at"), 1700000000);
  EXPECT_EQ(r->at("model"), "claude-opus-4-5");
  EXPECT_EQ(r->at("status"), "completed");
  EXPECT_TRUE(r->at("incomplete_details").is_null());
  EXPECT_EQ(r->at("usage"), json::parse(R"({"input_tokens":22,"input_tokens_details":{"cached_tokens":16,"cache_write_tokens":2},
    "output_tokens":7,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":29})"));
}

TEST(AnthropicUpstreamResponsesResponse, StopReasonsAsTheStreamMapsThem) {
  auto outcome = [](std::string_view stop_reason) {
    auto r = response_of_message(message_with(R"("content":[{"type":"text","text":"a"}],"stop_reason":)" + std::string(stop_reason)), info);
    EXPECT_TRUE(static_cast<bool>(r));
    if (!r) return std::string();
    const auto& details = r->at("incomplete_details");
    return std::string(r->at("status").as_string()) + "/" + (details.is_null() ? "-" : std::string(details.at("reason").as_string()));
  };
  for (const char* completed : {R"("end_turn")", R"("stop_sequence")", R"("pause_turn")", R"("tool_use")", R"("later")", "null"})
    EXPECT_EQ(outcome(completed), "completed/-") << completed;
  EXPECT_EQ(outcome(R"("max_tokens")"), "incomplete/max_output_tokens");
  EXPECT_EQ(outcome(R"("model_context_window_exceeded")"), "incomplete/max_output_tokens");
  EXPECT_EQ(outcome(R"("refusal")"), "incomplete/content_filter");
}

TEST(AnthropicUpstreamResponsesResponse, NoContentIsNoOutputAndNoModelIsTheAskedOne) {
  auto r = response_of_message(json::parse(R"({"content":[],"stop_reason":"end_turn"})").as_object(), info);
  ASSERT_TRUE(static_cast<bool>(r));
  EXPECT_EQ(r->at("output"), json::array{});
  EXPECT_EQ(r->at("model"), "asked-model");
  EXPECT_EQ(r->at("usage").at("total_tokens"), 0);
}

TEST(AnthropicUpstreamResponsesResponse, ABodyThatIsNotAMessageIsAProtocolError) {
  for (const char* body : {R"({"type":"error","error":{"type":"api_error","message":"x"}})", R"({"type":"message"})",
                           R"({"type":"message","content":"text"})", R"({"type":"message","content":[5]})",
                           R"({"type":"message","content":[{"type":"tool_use","name":"f","input":{}}]})",
                           R"({"type":"message","content":[{"type":"tool_use","id":"t","input":{}}]})",
                           R"({"type":"message","content":[{"type":"tool_use","id":"t","name":"f","input":"{}"}]})"}) {
    auto r = response_of_message(json::parse(body).as_object(), info);
    ASSERT_FALSE(static_cast<bool>(r)) << body;
    EXPECT_EQ(r.err().code, sluice::errc::upstream_protocol) << body;
  }
}

// The whole answer and the stream of the same answer end with the same response object.
TEST(AnthropicUpstreamResponsesResponse, TheWholeAnswerIsWhatTheStreamCompletesWith) {
  const std::string upstream =
      "data: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-x\",\"usage\":{\"input_tokens\":3,\"cache_read_input_tokens\":1}}}\n\n"
      "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n"
      "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"Hm.\"}}\n\n"
      "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
      "data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
      "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"Cut\"}}\n\n"
      "data: {\"type\":\"content_block_stop\",\"index\":1}\n\n"
      "data: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"f\",\"input\":{}}}\n\n"
      "data: {\"type\":\"content_block_stop\",\"index\":2}\n\n"
      "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"},\"usage\":{\"output_tokens\":5}}\n\n"
      "data: {\"type\":\"message_stop\"}\n\n";
  sluice::dialects::messages_to_responses_stream t(info);
  std::string out;
  sluice::sse::parser parser;
  ASSERT_TRUE(static_cast<bool>(parser.feed(upstream, [&](const sluice::sse::event_view& ev) { return t.on_event(ev.type, ev.data, out); })));
  const auto last = json::parse(out.substr(out.rfind("data: ") + 6)).as_object();
  EXPECT_EQ(last.at("type"), "response.incomplete");
  auto whole = response_of_message(message_with(R"("model":"claude-x","content":[{"type":"thinking","thinking":"Hm.","signature":"s"},
    {"type":"text","text":"Cut"},{"type":"tool_use","id":"t","name":"f","input":{}}],"stop_reason":"max_tokens",
    "usage":{"input_tokens":3,"cache_read_input_tokens":1,"output_tokens":5})"), info);
  ASSERT_TRUE(static_cast<bool>(whole));
  EXPECT_EQ(last.at("response"), *whole);
}

}  // namespace anthropic_upstream_responses_response_test
