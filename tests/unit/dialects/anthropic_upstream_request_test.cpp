// The chat-completions request → Messages request translation (an Anthropic upstream behind
// /v1/chat/completions): each part of the mapping in docs/dialects.md, each refusal naming its
// field, and what is dropped.
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "dialects/anthropic_upstream_request.hpp"

namespace anthropic_upstream_request_test {

namespace json = boost::json;
using sluice::dialects::messages_request_of;

json::object translated(std::string_view chat_request, std::uint64_t default_max_tokens = 4096) {
  auto r = messages_request_of(json::parse(chat_request).as_object(), {default_max_tokens});
  EXPECT_TRUE(static_cast<bool>(r)) << (r ? "" : r.err().message + " (" + r.err().param + ")");
  return r ? *r : json::object{};
}

std::string refusal_param(std::string_view chat_request) {
  auto r = messages_request_of(json::parse(chat_request).as_object(), {});
  EXPECT_FALSE(static_cast<bool>(r)) << chat_request;
  if (r) return "(accepted)";
  EXPECT_EQ(r.err().code, sluice::errc::bad_request);
  EXPECT_FALSE(r.err().message.empty());
  return r.err().param;
}

// A request with `extra` members beside a minimal valid one.
std::string with(std::string_view extra) {
  return R"({"model":"claude-x","messages":[{"role":"user","content":"Hi"}])" + std::string(extra.empty() ? "" : ",") +
         std::string(extra) + "}";
}

TEST(AnthropicUpstreamRequest, AMinimalRequestGetsTheDefaultMaxTokens) {
  EXPECT_EQ(translated(with(""), 1234), json::parse(R"({"model":"claude-x","messages":[{"role":"user","content":"Hi"}],
    "max_tokens":1234})").as_object());
}

TEST(AnthropicUpstreamRequest, SystemAndDeveloperMessagesJoinTheSystemPromptWhereverTheyStand) {
  const auto out = translated(R"({"model":"m","messages":[
    {"role":"system","content":"Be brief."},
    {"role":"user","content":[{"type":"text","text":"Hi"},{"type":"text","text":"there"}]},
    {"role":"developer","content":[{"type":"text","text":"Use French."},{"type":"text","text":"No emoji."}]},
    {"role":"assistant","content":"Bonjour"},{"role":"system","content":""}],
    "max_completion_tokens":64,"temperature":0.5,"top_p":1,"stop":"END","stream":true,"user":"u-1",
    "stream_options":{"include_usage":true},"store":false,"metadata":{"k":"v"},"service_tier":"auto","unknown_key":7})");
  EXPECT_EQ(out, json::parse(R"({"model":"m","system":"Be brief.\n\nUse French.\nNo emoji.",
    "messages":[{"role":"user","content":[{"type":"text","text":"Hi"},{"type":"text","text":"there"}]},
                {"role":"assistant","content":[{"type":"text","text":"Bonjour"}]}],
    "max_tokens":64,"temperature":0.5,"top_p":1,"stop_sequences":["END"],"stream":true,"metadata":{"user_id":"u-1"}})").as_object());
}

TEST(AnthropicUpstreamRequest, ToolCallsAndToolMessagesBecomeToolUseAndOneToolResultTurn) {
  const auto out = translated(R"({"model":"m","messages":[{"role":"user","content":"Paris and Oslo?"},
    {"role":"assistant","content":null,"tool_calls":[
      {"id":"call_a","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}},
      {"id":"call_b","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},
    {"role":"tool","tool_call_id":"call_a","content":"18C"},
    {"role":"tool","tool_call_id":"call_b","content":[{"type":"text","text":"4C"}]},
    {"role":"user","content":"Thanks"}]})");
  EXPECT_EQ(out.at("messages"), json::parse(R"([{"role":"user","content":"Paris and Oslo?"},
    {"role":"assistant","content":[{"type":"tool_use","id":"call_a","name":"get_weather","input":{"city":"Paris"}},
                                   {"type":"tool_use","id":"call_b","name":"get_weather","input":{"city":"Oslo"}}]},
    {"role":"user","content":[{"type":"tool_result","tool_use_id":"call_a","content":"18C"},
                              {"type":"tool_result","tool_use_id":"call_b","content":[{"type":"text","text":"4C"}]}]},
    {"role":"user","content":"Thanks"}])"));
}

TEST(AnthropicUpstreamRequest, AssistantTextAndRefusalPartsBecomeTextBlocksAndAnEmptyTurnIsDropped) {
  const auto out = translated(R"({"model":"m","messages":[{"role":"user","content":"x"},
    {"role":"assistant","content":[{"type":"text","text":"a"},{"type":"refusal","refusal":"b"},{"type":"text","text":""}],
     "tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":""}}]},
    {"role":"assistant","content":""},{"role":"user","content":"y"}]})");
  EXPECT_EQ(out.at("messages"), json::parse(R"([{"role":"user","content":"x"},
    {"role":"assistant","content":[{"type":"text","text":"a"},{"type":"text","text":"b"},{"type":"tool_use","id":"c","name":"f","input":{}}]},
    {"role":"user","content":"y"}])"));
}

TEST(AnthropicUpstreamRequest, ImagePartsBecomeBase64OrUrlImageBlocks) {
  const auto out = translated(R"({"model":"m","messages":[{"role":"user","content":[
    {"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo=","detail":"high"}},
    {"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}]})");
  EXPECT_EQ(out.at("messages").at(0).at("content"), json::parse(R"([
    {"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},
    {"type":"image","source":{"type":"url","url":"https://example.com/a.png"}}])"));
}

TEST(AnthropicUpstreamRequest, ToolsToolChoiceAndParallelToolCalls) {
  const std::string tools = R"("tools":[{"type":"function","function":{"name":"get_weather","description":"Weather",
    "parameters":{"type":"object","properties":{"city":{"type":"string"}}},"strict":true}},{"type":"function","function":{"name":"now"}}])";
  auto out = translated(with(tools));
  EXPECT_EQ(out.at("tools"), json::parse(R"([{"name":"get_weather","description":"Weather",
    "input_schema":{"type":"object","properties":{"city":{"type":"string"}}}},{"name":"now","input_schema":{"type":"object"}}])"));
  EXPECT_FALSE(out.contains("tool_choice"));
  auto choice = [&](std::string extra) { return json::serialize(translated(with(tools + "," + extra)).at("tool_choice")); };
  EXPECT_EQ(choice(R"("tool_choice":"auto")"), R"({"type":"auto"})");
  EXPECT_EQ(choice(R"("tool_choice":"required")"), R"({"type":"any"})");
  EXPECT_EQ(choice(R"("tool_choice":"none","parallel_tool_calls":false)"), R"({"type":"none"})");
  EXPECT_EQ(choice(R"("tool_choice":{"type":"function","function":{"name":"now"}})"), R"({"type":"tool","name":"now"})");
  EXPECT_EQ(choice(R"("parallel_tool_calls":false)"), R"({"type":"auto","disable_parallel_tool_use":true})");
  EXPECT_EQ(choice(R"("tool_choice":"required","parallel_tool_calls":false)"), R"({"type":"any","disable_parallel_tool_use":true})");
  // Without tools, tool_choice is checked and dropped: the Messages API refuses it alone.
  EXPECT_FALSE(translated(with(R"("tool_choice":"auto","parallel_tool_calls":false,"tools":[])")).contains("tool_choice"));
}

TEST(AnthropicUpstreamRequest, ResponseFormatAndReasoningEffortBecomeOutputConfig) {
  EXPECT_EQ(translated(with(R"("response_format":{"type":"json_schema","json_schema":{"name":"x","strict":true,
    "schema":{"type":"object","required":["city"]}}},"reasoning_effort":"minimal")")).at("output_config"),
            json::parse(R"({"format":{"type":"json_schema","schema":{"type":"object","required":["city"]}},"effort":"low"})"));
  EXPECT_FALSE(translated(with(R"("response_format":{"type":"text"})")).contains("output_config"));
  for (const auto& [in, effort] : {std::pair{"low", "low"}, {"medium", "medium"}, {"high", "high"}, {"xhigh", "xhigh"}})
    EXPECT_EQ(translated(with(R"("reasoning_effort":")" + std::string(in) + "\"")).at("output_config").at("effort"), effort);
}

TEST(AnthropicUpstreamRequest, DefaultsAndNullsAreNotRefused) {
  const auto out = translated(with(R"("n":1,"logprobs":false,"frequency_penalty":0,"presence_penalty":0.0,"logit_bias":{},
    "modalities":["text"],"seed":null,"top_logprobs":null,"temperature":null,"stop":null,"tools":null,"max_tokens":null)"));
  EXPECT_EQ(out, json::parse(R"({"model":"claude-x","messages":[{"role":"user","content":"Hi"}],"max_tokens":4096})").as_object());
}

TEST(AnthropicUpstreamRequest, WhitespaceChangesNothing) {
  EXPECT_EQ(translated(R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}],"stop":["a","b"]})"),
            translated("{ \"model\" : \"m\" ,\n \"max_tokens\" : 5 , \"messages\" : [ { \"role\" : \"user\" ,\t\"content\" : \"x\" } ] ,"
                       " \"stop\" : [ \"a\" , \"b\" ] }"));
}

TEST(AnthropicUpstreamRequest, EachTopLevelFieldItCannotCarryIsRefusedByName) {
  EXPECT_EQ(refusal_param(R"({"messages":[{"role":"user","content":"x"}]})"), "model");
  EXPECT_EQ(refusal_param(R"({"model":"m"})"), "messages");
  EXPECT_EQ(refusal_param(R"({"model":"m","messages":[]})"), "messages");
  EXPECT_EQ(refusal_param(R"({"model":"m","messages":[{"role":"system","content":"only a system prompt"}]})"), "messages");
  for (const char* field : {R"("max_tokens":0)", R"("max_tokens":2147483648)", R"("max_tokens":1.5)", R"("max_tokens":"5")"})
    EXPECT_EQ(refusal_param(with(field)), "max_tokens") << field;
  EXPECT_EQ(refusal_param(with(R"("max_completion_tokens":-1)")), "max_completion_tokens");
  EXPECT_EQ(refusal_param(with(R"("temperature":1.5)")), "temperature");  // OpenAI allows 2; the Messages API 1
  EXPECT_EQ(refusal_param(with(R"("temperature":-0.1)")), "temperature");
  EXPECT_EQ(refusal_param(with(R"("top_p":"0.5")")), "top_p");
  EXPECT_EQ(refusal_param(with(R"("stop":["a","b","c","d","e"])")), "stop");
  EXPECT_EQ(refusal_param(with(R"("stop":[1])")), "stop");
  EXPECT_EQ(refusal_param(with(R"("stream":"yes")")), "stream");
  EXPECT_EQ(refusal_param(with(R"("user":5)")), "user");
  for (const char* f : {R"("n":2)", R"("logprobs":true)", R"("top_logprobs":3)", R"("frequency_penalty":0.5)",
                        R"("presence_penalty":-1)", R"("logit_bias":{"50256":-100})", R"("seed":7)", R"("audio":{"voice":"x"})",
                        R"("modalities":["text","audio"])", R"("prediction":{"type":"content","content":"x"})",
                        R"("functions":[])", R"("function_call":"auto")", R"("web_search_options":{})"}) {
    const std::string field(f);
    EXPECT_EQ(refusal_param(with(field)), field.substr(1, field.find('"', 1) - 1)) << field;
  }
  EXPECT_EQ(refusal_param(with(R"("response_format":{"type":"json_object"})")), "response_format.type");
  EXPECT_EQ(refusal_param(with(R"("response_format":{"type":"json_schema","json_schema":{"name":"x"}})")), "response_format.json_schema.schema");
  EXPECT_EQ(refusal_param(with(R"("reasoning_effort":"extreme")")), "reasoning_effort");
}

TEST(AnthropicUpstreamRequest, EachToolFieldItCannotCarryIsRefusedByName) {
  const std::string tool = R"("tools":[{"type":"function","function":{"name":"f"}}])";
  EXPECT_EQ(refusal_param(with(R"("tools":{})")), "tools");
  EXPECT_EQ(refusal_param(with(R"("tools":[{"type":"function","function":{"name":"f"}},{"type":"custom","custom":{"name":"g"}}])")), "tools.1.type");
  EXPECT_EQ(refusal_param(with(R"("tools":[{"type":"function","function":{}}])")), "tools.0.function.name");
  EXPECT_EQ(refusal_param(with(R"("tools":[{"type":"function","function":{"name":"f","parameters":[]}}])")), "tools.0.function.parameters");
  EXPECT_EQ(refusal_param(with(R"("tools":[{"type":"function","function":{"name":"f","description":1}}])")), "tools.0.function.description");
  EXPECT_EQ(refusal_param(with(tool + R"(,"tool_choice":"sometimes")")), "tool_choice");
  EXPECT_EQ(refusal_param(with(tool + R"(,"tool_choice":{"type":"allowed_tools","allowed_tools":{}})")), "tool_choice");
  EXPECT_EQ(refusal_param(with(tool + R"(,"parallel_tool_calls":"no")")), "parallel_tool_calls");
}

TEST(AnthropicUpstreamRequest, EachMessageFieldItCannotCarryIsRefusedByName) {
  auto msgs = [](std::string m) { return R"({"model":"m","messages":[{"role":"user","content":"x"},)" + m + "]}"; };
  EXPECT_EQ(refusal_param(msgs(R"(7)")), "messages.1");
  EXPECT_EQ(refusal_param(msgs(R"({"role":"function","name":"f","content":"x"})")), "messages.1.role");
  EXPECT_EQ(refusal_param(msgs(R"({"role":"user","content":[{"type":"text","text":"a"},{"type":"input_audio","input_audio":{}}]})")), "messages.1.content.1.type");
  EXPECT_EQ(refusal_param(msgs(R"({"role":"user","content":[{"type":"file","file":{}}]})")), "messages.1.content.0.type");
  EXPECT_EQ(refusal_param(msgs(R"({"role":"user","content":[{"type":"text"}]})")), "messages.1.content.0.text");
  EXPECT_EQ(refusal_param(msgs(R"({"role":"user","content":[]})")), "messages.1.content");
  EXPECT_EQ(refusal_param(msgs(R"({"role":"user","content":5})")), "messages.1.content");
  EXPECT_EQ(refusal_param(msgs(R"({"role":"user","content":[{"type":"image_url","image_url":{"url":"ftp://x/a.png"}}]})")), "messages.1.content.0.image_url.url");
  EXPECT_EQ(refusal_param(msgs(R"({"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png,abc"}}]})")), "messages.1.content.0.image_url.url");
  EXPECT_EQ(refusal_param(msgs(R"({"role":"system","content":[{"type":"image_url","image_url":{"url":"https://x"}}]})")), "messages.1.content.0.type");
  EXPECT_EQ(refusal_param(msgs(R"({"role":"assistant","content":[{"type":"audio"}]})")), "messages.1.content.0.type");
  EXPECT_EQ(refusal_param(msgs(R"({"role":"assistant","function_call":{"name":"f","arguments":"{}"}})")), "messages.1.function_call");
  const std::string call = R"({"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},)";
  EXPECT_EQ(refusal_param(msgs(call + R"({"id":"b","type":"function","function":{"name":"f","arguments":"[1]"}}]})")), "messages.1.tool_calls.1.function.arguments");
  EXPECT_EQ(refusal_param(msgs(call + R"({"id":"b","type":"function","function":{"name":"f","arguments":"{\"a\":"}}]})")), "messages.1.tool_calls.1.function.arguments");
  EXPECT_EQ(refusal_param(msgs(call + R"({"id":"b","type":"custom","custom":{}}]})")), "messages.1.tool_calls.1.type");
  EXPECT_EQ(refusal_param(msgs(call + R"({"type":"function","function":{"name":"f"}}]})")), "messages.1.tool_calls.1.id");
  EXPECT_EQ(refusal_param(msgs(call + R"({"id":"b","function":{}}]})")), "messages.1.tool_calls.1.function.name");
  EXPECT_EQ(refusal_param(msgs(R"({"role":"tool","content":"x"})")), "messages.1.tool_call_id");
  EXPECT_EQ(refusal_param(msgs(R"({"role":"tool","tool_call_id":"a","content":[{"type":"image_url"}]})")), "messages.1.content.0.type");
}

}  // namespace anthropic_upstream_request_test
