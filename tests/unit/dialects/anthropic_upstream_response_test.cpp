// A whole Messages answer → a chat completion (an Anthropic upstream behind /v1/chat/completions):
// blocks, stop reasons, usage, refusals of what is not a message; and the upstream's error bodies
// and statuses as an OpenAI client sees them.
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

#include "dialects/anthropic_upstream_response.hpp"

namespace anthropic_upstream_response_test {

namespace json = boost::json;
using sluice::dialects::chat_completion_of;
using sluice::dialects::openai_error_body_of_messages;
using sluice::dialects::openai_status_of_messages;

const sluice::dialects::chunk_start_info info{"chatcmpl-00112233445566778899aabbccddeeff", "asked-model", 1700000000, false};

TEST(AnthropicUpstreamResponse, ThinkingTextAndToolUseBecomeAChatCompletion) {
  auto r = chat_completion_of(json::parse(R"({"id":"msg_01","type":"message","role":"assistant","model":"claude-opus-4-5",
    "content":[{"type":"thinking","thinking":"Think.","signature":"EqQB"},{"type":"redacted_thinking","data":"x"},
      {"type":"text","text":"Checking "},{"type":"text","text":"now."},
      {"type":"tool_use","id":"toolu_a","name":"get_weather","input":{"city":"Paris"}},
      {"type":"tool_use","id":"toolu_b","name":"get_time","input":{}}],
    "stop_reason":"tool_use","stop_sequence":null,
    "usage":{"input_tokens":4,"cache_read_input_tokens":16,"cache_creation_input_tokens":2,"output_tokens":7}})").as_object(), info);
  ASSERT_TRUE(static_cast<bool>(r));
  EXPECT_EQ(*r, json::parse(R"({"id":"chatcmpl-00112233445566778899aabbccddeeff","object":"chat.completion","created":1700000000,
    "model":"claude-opus-4-5","choices":[{"index":0,"message":{"role":"assistant","content":"Checking now.","reasoning_content":"Think.",
      "tool_calls":[{"id":"toolu_a","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
                    {"id":"toolu_b","type":"function","function":{"name":"get_time","arguments":"{}"}}]},
      "logprobs":null,"finish_reason":"tool_calls"}],
    "usage":{"prompt_tokens":22,"completion_tokens":7,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":16}}})").as_object());
}

TEST(AnthropicUpstreamResponse, StopReasonsAsTheStreamMapsThem) {
  auto finish = [](std::string_view stop_reason) {
    auto r = chat_completion_of(json::parse(R"({"type":"message","content":[{"type":"text","text":"a"}],"stop_reason":)" +
                                            std::string(stop_reason) + "}").as_object(), info);
    EXPECT_TRUE(static_cast<bool>(r));
    return r ? std::string(r->at("choices").at(0).at("finish_reason").as_string()) : "";
  };
  EXPECT_EQ(finish(R"("end_turn")"), "stop");
  EXPECT_EQ(finish(R"("stop_sequence")"), "stop");
  EXPECT_EQ(finish(R"("pause_turn")"), "stop");
  EXPECT_EQ(finish(R"("max_tokens")"), "length");
  EXPECT_EQ(finish(R"("model_context_window_exceeded")"), "length");
  EXPECT_EQ(finish(R"("tool_use")"), "tool_calls");
  EXPECT_EQ(finish(R"("refusal")"), "content_filter");
  EXPECT_EQ(finish(R"("a_reason_added_later")"), "stop");
  EXPECT_EQ(finish("null"), "stop");
}

TEST(AnthropicUpstreamResponse, NoTextIsNullContentAndNoModelIsTheAskedOne) {
  auto r = chat_completion_of(json::parse(R"({"content":[],"stop_reason":"refusal"})").as_object(), info);
  ASSERT_TRUE(static_cast<bool>(r));
  EXPECT_TRUE(r->at("choices").at(0).at("message").at("content").is_null());
  EXPECT_EQ(r->at("model"), "asked-model");
  EXPECT_EQ(r->at("usage").at("total_tokens"), 0);
}

TEST(AnthropicUpstreamResponse, WhatIsNotAMessageIsAnUpstreamProtocolError) {
  for (const char* bad : {R"({"type":"error","error":{"type":"api_error","message":"x"}})", R"({"type":"message"})",
                          R"({"content":"text"})", R"({"content":[7]})",
                          R"({"content":[{"type":"tool_use","id":"t","name":"f","input":[1]}]})",
                          R"({"content":[{"type":"tool_use","name":"f","input":{}}]})"}) {
    auto r = chat_completion_of(json::parse(bad).as_object(), info);
    ASSERT_FALSE(static_cast<bool>(r)) << bad;
    EXPECT_EQ(r.err().code, sluice::errc::upstream_protocol) << bad;
  }
}

TEST(AnthropicUpstreamResponse, AnErrorBodyKeepsItsMessageInOpenAisShape) {
  auto body = [](unsigned status, std::string_view anthropic) { return json::parse(openai_error_body_of_messages(status, anthropic)); };
  EXPECT_EQ(body(529, R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})"),
            json::parse(R"({"error":{"message":"Overloaded","type":"upstream_error","param":null,"code":"upstream_overloaded"}})"));
  EXPECT_EQ(body(429, R"({"type":"error","error":{"type":"rate_limit_error","message":"Slow down"},"request_id":"req_1"})"),
            json::parse(R"({"error":{"message":"Slow down","type":"rate_limit_error","param":null,"code":"rate_limit_exceeded"}})"));
  EXPECT_EQ(body(400, R"({ "type" : "error", "error" : { "type" : "invalid_request_error", "message" : "max_tokens: too big" } })"),
            json::parse(R"({"error":{"message":"max_tokens: too big","type":"invalid_request_error","param":null,"code":"upstream_error"}})"));
  EXPECT_EQ(body(500, R"({"type":"error","error":{"type":"api_error","message":"Internal"}})").at("error").at("type"), "upstream_error");
}

TEST(AnthropicUpstreamResponse, ABodyThatIsNotAnErrorKeepsNoTextOfIt) {
  const auto page = openai_error_body_of_messages(502, "<html><body>secret-internal-host bad gateway</body></html>");
  EXPECT_EQ(page.find("secret"), std::string::npos);
  EXPECT_EQ(json::parse(page), json::parse(R"({"error":{"message":"The upstream failed to answer.","type":"upstream_error","param":null,"code":"upstream_error"}})"));
  EXPECT_EQ(json::parse(openai_error_body_of_messages(529, "")).at("error").at("code"), "upstream_overloaded");
  EXPECT_EQ(json::parse(openai_error_body_of_messages(429, "{}")).at("error").at("code"), "rate_limit_exceeded");
  EXPECT_EQ(json::parse(openai_error_body_of_messages(404, R"({"error":{"message":"openai-shaped"}})")).at("error").at("message"),
            "The upstream refused the request.");
}

TEST(AnthropicUpstreamResponse, OverloadedIs503ForAnOpenAiClient) {
  EXPECT_EQ(openai_status_of_messages(529), 503u);
  for (unsigned s : {200u, 400u, 401u, 429u, 500u, 503u, 504u}) EXPECT_EQ(openai_status_of_messages(s), s);
}

}  // namespace anthropic_upstream_response_test
