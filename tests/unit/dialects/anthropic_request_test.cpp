// The Messages request → chat-completions request translation: each part of the mapping in
// docs/dialects.md, and each refusal naming its field.
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "dialects/anthropic_request.hpp"

namespace {

namespace json = boost::json;
using sluice::dialects::chat_request_of;

json::object translated(std::string_view messages_request) {
  auto r = chat_request_of(json::parse(messages_request).as_object());
  EXPECT_TRUE(static_cast<bool>(r)) << (r ? "" : r.err().message);
  return r ? *r : json::object{};
}

std::string refusal_param(std::string_view messages_request) {
  auto r = chat_request_of(json::parse(messages_request).as_object());
  EXPECT_FALSE(static_cast<bool>(r));
  return r ? "(accepted)" : r.err().param;
}

TEST(AnthropicRequest, SystemTurnsAndNumbersBecomeAChatRequest) {
  const auto out = translated(R"({"model":"m","max_tokens":64,"temperature":0.5,"system":[{"type":"text","text":"Be brief."}],
    "messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":[{"type":"text","text":"Hello"}]}],
    "stop_sequences":["END"],"stream":true,"metadata":{"user_id":"u-1"}})");
  EXPECT_EQ(out, json::parse(R"({"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"},
    {"role":"assistant","content":[{"type":"text","text":"Hello"}]}],"max_tokens":64,"temperature":0.5,"stop":["END"],
    "stream":true,"stream_options":{"include_usage":true},"user":"u-1"})").as_object());
}

TEST(AnthropicRequest, ToolUseAndToolResultsBecomeToolCallsAndToolMessages) {
  const auto out = translated(R"({"model":"m","max_tokens":10,
    "tools":[{"name":"get_weather","description":"Weather","input_schema":{"type":"object"}}],
    "tool_choice":{"type":"any","disable_parallel_tool_use":true},
    "messages":[{"role":"user","content":"Paris?"},
      {"role":"assistant","content":[{"type":"text","text":"Checking."},{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},
      {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"18C"}]},{"type":"text","text":"Thanks"}]}]})");
  const auto& msgs = out.at("messages").as_array();
  ASSERT_EQ(msgs.size(), 4u);
  const auto& call = msgs[1].at("tool_calls").at(0);
  EXPECT_EQ(call.at("id"), "toolu_1");
  EXPECT_EQ(json::parse(call.at("function").at("arguments").as_string()), json::parse(R"({"city":"Paris"})"));
  EXPECT_EQ(msgs[2], json::parse(R"({"role":"tool","tool_call_id":"toolu_1","content":"18C"})"));
  EXPECT_EQ(msgs[3].at("content").at(0).at("text"), "Thanks");
  EXPECT_EQ(out.at("tools").at(0).at("function").at("parameters"), json::parse(R"({"type":"object"})"));
  EXPECT_EQ(out.at("tool_choice"), "required");
  EXPECT_EQ(out.at("parallel_tool_calls"), false);
}

TEST(AnthropicRequest, AnImageBlockBecomesAnImageUrlPart) {
  const auto out = translated(R"({"model":"m","max_tokens":1,"messages":[{"role":"user","content":[
    {"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}},
    {"type":"image","source":{"type":"url","url":"https://example.com/a.png"}}]}]})");
  const auto& parts = out.at("messages").at(0).at("content").as_array();
  EXPECT_EQ(parts[0].at("image_url").at("url"), "data:image/png;base64,iVBO");
  EXPECT_EQ(parts[1].at("image_url").at("url"), "https://example.com/a.png");
}

TEST(AnthropicRequest, WhitespaceChangesNothing) {
  EXPECT_EQ(translated(R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}]})"),
            translated("{ \"model\" : \"m\" ,\n \"max_tokens\" : 5 , \"messages\" : [ { \"role\" : \"user\" , \"content\" : \"x\" } ] }"));
}

TEST(AnthropicRequest, EachOutOfRangeOrMalformedFieldIsRefusedByName) {
  EXPECT_EQ(refusal_param(R"({"max_tokens":5,"messages":[{"role":"user","content":"x"}]})"), "model");
  EXPECT_EQ(refusal_param(R"({"model":"m","messages":[{"role":"user","content":"x"}]})"), "max_tokens");
  EXPECT_EQ(refusal_param(R"({"model":"m","max_tokens":0,"messages":[{"role":"user","content":"x"}]})"), "max_tokens");
  EXPECT_EQ(refusal_param(R"({"model":"m","max_tokens":2147483648,"messages":[{"role":"user","content":"x"}]})"), "max_tokens");
  EXPECT_EQ(refusal_param(R"({"model":"m","max_tokens":1.5,"messages":[{"role":"user","content":"x"}]})"), "max_tokens");
  EXPECT_EQ(refusal_param(R"({"model":"m","max_tokens":5,"temperature":1.5,"messages":[{"role":"user","content":"x"}]})"), "temperature");
  EXPECT_EQ(refusal_param(R"({"model":"m","max_tokens":5,"top_k":5,"messages":[{"role":"user","content":"x"}]})"), "top_k");
  EXPECT_EQ(refusal_param(R"({"model":"m","max_tokens":5,"messages":[]})"), "messages");
  EXPECT_EQ(refusal_param(R"({"model":"m","max_tokens":5,"messages":[{"role":"system","content":"x"}]})"), "messages.0.role");
  EXPECT_EQ(refusal_param(R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"audio"}]}]})"), "messages.0.content.0.type");
  EXPECT_EQ(refusal_param(R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}],"tool_choice":{"type":"tool"}})"), "tool_choice.type");
  EXPECT_EQ(refusal_param(R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}],"stop_sequences":[1]})"), "stop_sequences");
  const std::string base = R"("model":"m","max_tokens":5000,"messages":[{"role":"user","content":"x"}])";
  EXPECT_EQ(refusal_param("{" + base + R"(,"output_config":{"effort":"extreme"}})"), "output_config.effort");
  EXPECT_EQ(refusal_param("{" + base + R"(,"output_config":{"format":{"type":"json_schema"}}})"), "output_config.format");
  EXPECT_EQ(refusal_param("{" + base + R"(,"output_config":7})"), "output_config");
  EXPECT_EQ(refusal_param("{" + base + R"(,"thinking":{"type":"enabled","budget_tokens":1023}})"), "thinking.budget_tokens");
  EXPECT_EQ(refusal_param("{" + base + R"(,"thinking":{"type":"enabled","budget_tokens":5000}})"), "thinking.budget_tokens");
  EXPECT_EQ(refusal_param("{" + base + R"(,"thinking":{"type":"sometimes"}})"), "thinking.type");
}

// A schema asked for through output_config.format is a chat response_format, so the gateway's
// structured outputs check it exactly as they check a chat request's.
TEST(AnthropicRequest, AnOutputFormatBecomesAResponseFormatAndEffortAReasoningEffort) {
  const auto out = translated(R"({"model":"m","max_tokens":64,"messages":[{"role":"user","content":"x"}],
    "output_config":{"effort":"max","format":{"type":"json_schema","schema":{"type":"object","required":["city"]}}}})");
  EXPECT_EQ(out.at("reasoning_effort"), "high");
  EXPECT_EQ(out.at("response_format"), json::parse(R"({"type":"json_schema","json_schema":{"name":"output",
    "schema":{"type":"object","required":["city"]},"strict":true}})"));
}

TEST(AnthropicRequest, AThinkingBudgetBecomesAReasoningEffortUnlessEffortNamesOne) {
  auto effort = [](std::string extra) {
    const auto out = translated(R"({"model":"m","max_tokens":32000,"messages":[{"role":"user","content":"x"}],)" + extra + "}");
    const auto* e = out.if_contains("reasoning_effort");
    return e ? std::string(e->as_string()) : std::string("(none)");
  };
  EXPECT_EQ(effort(R"("thinking":{"type":"enabled","budget_tokens":1024})"), "low");
  EXPECT_EQ(effort(R"("thinking":{"type":"enabled","budget_tokens":4096})"), "medium");
  EXPECT_EQ(effort(R"("thinking":{"type":"enabled","budget_tokens":16384})"), "high");
  EXPECT_EQ(effort(R"("thinking":{"type":"disabled"})"), "(none)");
  EXPECT_EQ(effort(R"("thinking":{"type":"enabled","budget_tokens":20000},"output_config":{"effort":"low"})"), "low");
}

}  // namespace
