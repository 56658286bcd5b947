// A whole chat completion → a Messages answer: blocks, stop reasons, usage, and refusals of what
// cannot be translated.
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

#include "dialects/anthropic_response.hpp"

namespace {

namespace json = boost::json;
using sluice::dialects::message_of;

const sluice::dialects::message_start_info info{"msg_00112233445566778899aabbccddeeff", "asked-model", 3};

TEST(AnthropicResponse, ReasoningTextAndToolCallsBecomeBlocksInOrder) {
  auto r = message_of(json::parse(R"({"id":"chatcmpl-1","model":"sim-1","choices":[{"index":0,"finish_reason":"tool_calls",
    "message":{"role":"assistant","reasoning_content":"Think.","content":"Checking.","tool_calls":[
      {"id":"call_a","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}},
      {"id":"call_b","type":"function","function":{"name":"get_time","arguments":""}}]}}],
    "usage":{"prompt_tokens":20,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":16}}})").as_object(), info);
  ASSERT_TRUE(static_cast<bool>(r));
  EXPECT_EQ(*r, json::parse(R"({"id":"msg_00112233445566778899aabbccddeeff","type":"message","role":"assistant","model":"sim-1",
    "content":[{"type":"thinking","thinking":"Think.","signature":""},{"type":"text","text":"Checking."},
      {"type":"tool_use","id":"call_a","name":"get_weather","input":{"city":"Paris"}},
      {"type":"tool_use","id":"call_b","name":"get_time","input":{}}],
    "stop_reason":"tool_use","stop_sequence":null,
    "usage":{"input_tokens":4,"output_tokens":7,"cache_read_input_tokens":16}})").as_object());
}

TEST(AnthropicResponse, StopReasonsAndAMatchedStopSequence) {
  auto reason = [](std::string_view choice) {
    auto r = message_of(json::parse(std::string(R"({"choices":[)") + std::string(choice) + "]}").as_object(), info);
    EXPECT_TRUE(static_cast<bool>(r));
    return r ? std::string(r->at("stop_reason").as_string()) + "/" + json::serialize(r->at("stop_sequence")) : "";
  };
  EXPECT_EQ(reason(R"({"finish_reason":"stop","message":{"content":"a"}})"), "end_turn/null");
  EXPECT_EQ(reason(R"({"finish_reason":"length","message":{"content":"a"}})"), "max_tokens/null");
  EXPECT_EQ(reason(R"({"finish_reason":"content_filter","message":{"content":null}})"), "refusal/null");
  EXPECT_EQ(reason(R"({"finish_reason":"stop","stop_reason":"END","message":{"content":"a"}})"), "stop_sequence/\"END\"");
}

TEST(AnthropicResponse, WhatCannotBeTranslatedIsAnUpstreamProtocolError) {
  for (const char* bad : {R"({"choices":[]})", R"({"choices":[{"message":"x"}]})",
                          R"({"choices":[{"message":{"tool_calls":[{"id":"c","function":{"name":"f","arguments":"[1]"}}]}}]})",
                          R"({"choices":[{"message":{"tool_calls":[{"id":"c","function":{"name":"f","arguments":"{\"a\":"}}]}}]})"}) {
    auto r = message_of(json::parse(bad).as_object(), info);
    ASSERT_FALSE(static_cast<bool>(r)) << bad;
    EXPECT_EQ(r.err().code, sluice::errc::upstream_protocol) << bad;
  }
}

}  // namespace
