// The Responses request → Messages request translation (an Anthropic upstream behind
// /v1/responses): each part of the mapping in docs/dialects.md ("/v1/responses"), each refusal
// naming its field, and what is dropped.
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "dialect_test_files.hpp"
#include "dialects/anthropic_upstream_responses_request.hpp"

namespace anthropic_upstream_responses_request_test {

namespace json = boost::json;
using sluice::dialects::messages_request_of_responses;

json::object translated(std::string_view request, std::uint64_t default_max_tokens = 4096) {
  return sluice::dialects::testing::accepted(messages_request_of_responses, request, default_max_tokens);
}

std::string refusal_param(std::string_view request) { return sluice::dialects::testing::refused_param(messages_request_of_responses, request); }

// A request with `extra` members beside a minimal valid one.
std::string with(std::string_view extra) {
  return R"({"model":"claude-x","input":"Hi")" + std::string(extra.empty() ? "" : ",") + std::string(extra) + "}";
}

// A request whose input is `items` (a JSON array's members).
std::string items(std::string_view members) { return R"({"model":"m","input":[)" + std::string(members) + "]}"; }

TEST(AnthropicUpstreamResponsesRequest, AStringInputIsOneUserTurnWithTheDefaultMaxTokens) {
  EXPECT_EQ(translated(with(""), 1234),
            json::parse(R"({"model":"claude-x","messages":[{"role":"user","content":"Hi"}],"max_tokens":1234})").as_object());
}

TEST(AnthropicUpstreamResponsesRequest, InstructionsThenSystemAndDeveloperItemsAreTheSystemPrompt) {
  const auto out = translated(R"({"model":"m","instructions":"Be brief.","input":[
    {"role":"system","content":"Use French."},
    {"type":"message","role":"user","content":[{"type":"input_text","text":"Hi"},{"type":"input_text","text":"there"}]},
    {"role":"developer","content":[{"type":"input_text","text":"No emoji."},{"type":"input_text","text":"Be kind."}]},
    {"type":"message","role":"assistant","content":[{"type":"output_text","text":"Bonjour","annotations":[]}]},
    {"role":"assistant","content":"Ça va ?"},{"role":"system","content":""}],
    "max_output_tokens":64,"temperature":0.5,"top_p":1,"stream":true,"user":"u-1",
    "background":false,"store":true,"metadata":{"k":"v"},"include":["reasoning.encrypted_content"],"truncation":"auto",
    "service_tier":"auto","stream_options":{"include_obfuscation":false},"safety_identifier":"s","prompt_cache_key":"k","unknown_key":7})");
  EXPECT_EQ(out, json::parse(R"({"model":"m","system":"Be brief.\n\nUse French.\n\nNo emoji.\nBe kind.",
    "messages":[{"role":"user","content":[{"type":"text","text":"Hi"},{"type":"text","text":"there"}]},
                {"role":"assistant","content":[{"type":"text","text":"Bonjour"}]},
                {"role":"assistant","content":[{"type":"text","text":"Ça va ?"}]}],
    "max_tokens":64,"temperature":0.5,"top_p":1,"stream":true,"metadata":{"user_id":"u-1"}})").as_object());
}

TEST(AnthropicUpstreamResponsesRequest, FunctionCallsAndTheirOutputsJoinTheirTurns) {
  const auto out = translated(items(R"({"role":"user","content":"Paris and Oslo?"},
    {"type":"reasoning","id":"rs_1","summary":[]},
    {"type":"message","role":"assistant","content":[{"type":"output_text","text":"Checking."}]},
    {"type":"function_call","id":"fc_1","call_id":"call_a","name":"get_weather","arguments":"{\"city\": \"Paris\"}","status":"completed"},
    {"type":"function_call","call_id":"call_b","name":"get_weather","arguments":""},
    {"type":"function_call_output","call_id":"call_a","output":"18C"},
    {"type":"function_call_output","call_id":"call_b","output":[{"type":"input_text","text":"4C"}]},
    {"role":"user","content":"Thanks"},
    {"type":"function_call","call_id":"call_c","name":"now","arguments":"{}"})"));
  EXPECT_EQ(out.at("messages"), json::parse(R"([{"role":"user","content":"Paris and Oslo?"},
    {"role":"assistant","content":[{"type":"text","text":"Checking."},
                                   {"type":"tool_use","id":"call_a","name":"get_weather","input":{"city":"Paris"}},
                                   {"type":"tool_use","id":"call_b","name":"get_weather","input":{}}]},
    {"role":"user","content":[{"type":"tool_result","tool_use_id":"call_a","content":"18C"},
                              {"type":"tool_result","tool_use_id":"call_b","content":[{"type":"text","text":"4C"}]}]},
    {"role":"user","content":"Thanks"},
    {"role":"assistant","content":[{"type":"tool_use","id":"call_c","name":"now","input":{}}]}])"));
}

TEST(AnthropicUpstreamResponsesRequest, ImagesBecomeBase64OrUrlImageBlocksAndEmptyAssistantTextIsDropped) {
  const auto out = translated(items(R"({"role":"user","content":[
    {"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo=","detail":"high"},
    {"type":"input_image","image_url":"https://example.com/a.png","detail":"auto"}]},
    {"role":"assistant","content":[{"type":"output_text","text":""},{"type":"refusal","refusal":"no"}]},
    {"role":"assistant","content":""})"));
  EXPECT_EQ(out.at("messages"), json::parse(R"([{"role":"user","content":[
    {"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},
    {"type":"image","source":{"type":"url","url":"https://example.com/a.png"}}]},
    {"role":"assistant","content":[{"type":"text","text":"no"}]}])"));
}

TEST(AnthropicUpstreamResponsesRequest, ToolsToolChoiceAndParallelToolCalls) {
  const std::string tools = R"("tools":[{"type":"function","name":"get_weather","description":"Weather",
    "parameters":{"type":"object","properties":{"city":{"type":"string"}}},"strict":true},{"type":"function","name":"now"}])";
  auto out = translated(with(tools));
  EXPECT_EQ(out.at("tools"), json::parse(R"([{"name":"get_weather","description":"Weather",
    "input_schema":{"type":"object","properties":{"city":{"type":"string"}}}},{"name":"now","input_schema":{"type":"object"}}])"));
  EXPECT_FALSE(out.contains("tool_choice"));
  // The mapping is chat's (anthropic_upstream_request_fields.hpp); the Responses shapes reach it.
  for (const auto& [extra, want] : {std::pair{R"("tool_choice":"required")", R"({"type":"any"})"},
                                    {R"("tool_choice":"none","parallel_tool_calls":false)", R"({"type":"none"})"},
                                    {R"("tool_choice":{"type":"function","name":"now"})", R"({"type":"tool","name":"now"})"},
                                    {R"("parallel_tool_calls":false)", R"({"type":"auto","disable_parallel_tool_use":true})"}})
    EXPECT_EQ(json::serialize(translated(with(tools + "," + extra)).at("tool_choice")), want) << extra;
  EXPECT_FALSE(translated(with(R"("tool_choice":"auto","parallel_tool_calls":false,"tools":[])")).contains("tool_choice"));
}

TEST(AnthropicUpstreamResponsesRequest, TextFormatAndReasoningEffortBecomeOutputConfig) {
  EXPECT_EQ(translated(with(R"("text":{"format":{"type":"json_schema","name":"x","strict":true,
    "schema":{"type":"object","required":["city"]}},"verbosity":"low"},"reasoning":{"effort":"minimal","summary":"auto"})")).at("output_config"),
            json::parse(R"({"format":{"type":"json_schema","schema":{"type":"object","required":["city"]}},"effort":"low"})"));
  EXPECT_FALSE(translated(with(R"("text":{"format":{"type":"text"}},"reasoning":{"summary":"auto"})")).contains("output_config"));
  for (const auto& [in, effort] : {std::pair{"low", "low"}, {"medium", "medium"}, {"high", "high"}, {"xhigh", "xhigh"}})
    EXPECT_EQ(translated(with(R"("reasoning":{"effort":")" + std::string(in) + "\"}")).at("output_config").at("effort"), effort);
}

TEST(AnthropicUpstreamResponsesRequest, NullsAreAbsent) {
  EXPECT_EQ(translated(with(R"("previous_response_id":null,"conversation":null,"top_logprobs":null,"prompt":null,"instructions":null,
    "temperature":null,"tools":null,"max_output_tokens":null,"text":null,"reasoning":null)")),
            json::parse(R"({"model":"claude-x","messages":[{"role":"user","content":"Hi"}],"max_tokens":4096})").as_object());
}

TEST(AnthropicUpstreamResponsesRequest, WhitespaceChangesNothing) {
  EXPECT_EQ(translated(R"({"model":"m","max_output_tokens":5,"input":[{"role":"user","content":"x"}],"tools":[{"type":"function","name":"f"}]})"),
            translated("{ \"model\" : \"m\" ,\n \"max_output_tokens\" : 5 , \"input\" : [ { \"role\" : \"user\" ,\t\"content\" : \"x\" } ] ,"
                       " \"tools\" : [ { \"type\" : \"function\" , \"name\" : \"f\" } ] }"));
}

TEST(AnthropicUpstreamResponsesRequest, EachTopLevelFieldItCannotCarryIsRefusedByName) {
  EXPECT_EQ(refusal_param(R"({"input":"x"})"), "model");
  EXPECT_EQ(refusal_param(R"({"model":"m"})"), "input");
  EXPECT_EQ(refusal_param(R"({"model":"m","input":[]})"), "input");
  EXPECT_EQ(refusal_param(R"({"model":"m","input":5})"), "input");
  EXPECT_EQ(refusal_param(R"({"model":"m","input":[{"role":"system","content":"only a system prompt"}]})"), "input");
  EXPECT_EQ(refusal_param(with(R"("instructions":["x"])")), "instructions");
  for (const char* field : {R"("max_output_tokens":0)", R"("max_output_tokens":2147483648)", R"("max_output_tokens":1.5)"})
    EXPECT_EQ(refusal_param(with(field)), "max_output_tokens") << field;
  EXPECT_EQ(refusal_param(with(R"("temperature":1.5)")), "temperature");
  EXPECT_EQ(refusal_param(with(R"("top_p":"0.5")")), "top_p");
  EXPECT_EQ(refusal_param(with(R"("stream":"yes")")), "stream");
  EXPECT_EQ(refusal_param(with(R"("user":5)")), "user");
  for (const char* f : {R"("previous_response_id":"resp_1")", R"("conversation":"conv_1")", R"("top_logprobs":2)",
                        R"("prompt":{"id":"pmpt_1"})"}) {
    const std::string field(f);
    EXPECT_EQ(refusal_param(with(field)), field.substr(1, field.find('"', 1) - 1)) << field;
  }
  auto r = messages_request_of_responses(json::parse(with(R"("previous_response_id":"resp_1")")).as_object(), {});
  ASSERT_FALSE(static_cast<bool>(r));
  EXPECT_NE(r.err().message.find("keeps no conversation state"), std::string::npos);
  EXPECT_EQ(refusal_param(with(R"("text":{"format":{"type":"json_object"}})")), "text.format.type");
  EXPECT_EQ(refusal_param(with(R"("text":{"format":{"type":"json_schema","name":"x"}})")), "text.format.schema");
  EXPECT_EQ(refusal_param(with(R"("text":"plain")")), "text");
  EXPECT_EQ(refusal_param(with(R"("reasoning":{"effort":"extreme"})")), "reasoning.effort");
  EXPECT_EQ(refusal_param(with(R"("reasoning":"high")")), "reasoning");
}

TEST(AnthropicUpstreamResponsesRequest, EachToolFieldItCannotCarryIsRefusedByName) {
  const std::string tool = R"("tools":[{"type":"function","name":"f"}])";
  EXPECT_EQ(refusal_param(with(R"("tools":{})")), "tools");
  for (const char* hosted : {"web_search", "web_search_preview", "file_search", "code_interpreter", "mcp", "computer_use_preview",
                             "image_generation", "local_shell", "custom"})
    EXPECT_EQ(refusal_param(with(R"("tools":[{"type":"function","name":"f"},{"type":")" + std::string(hosted) + "\"}]")), "tools.1.type") << hosted;
  EXPECT_EQ(refusal_param(with(R"("tools":[{"type":"function"}])")), "tools.0.name");
  EXPECT_EQ(refusal_param(with(R"("tools":[{"type":"function","name":"f","parameters":[]}])")), "tools.0.parameters");
  EXPECT_EQ(refusal_param(with(R"("tools":[{"type":"function","name":"f","description":1}])")), "tools.0.description");
  EXPECT_EQ(refusal_param(with(tool + R"(,"tool_choice":"sometimes")")), "tool_choice");
  EXPECT_EQ(refusal_param(with(tool + R"(,"tool_choice":{"type":"function","function":{"name":"f"}})")), "tool_choice");
  EXPECT_EQ(refusal_param(with(tool + R"(,"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[]})")), "tool_choice");
  EXPECT_EQ(refusal_param(with(tool + R"(,"tool_choice":{"type":"web_search_preview"})")), "tool_choice");
  EXPECT_EQ(refusal_param(with(tool + R"(,"parallel_tool_calls":"no")")), "parallel_tool_calls");
}

TEST(AnthropicUpstreamResponsesRequest, EachInputItemFieldItCannotCarryIsRefusedByName) {
  auto more = [](std::string item) { return items(R"({"role":"user","content":"x"},)" + item); };
  EXPECT_EQ(refusal_param(more("7")), "input.1");
  EXPECT_EQ(refusal_param(more(R"({"type":"item_reference","id":"msg_1"})")), "input.1.type");
  EXPECT_EQ(refusal_param(more(R"({"type":"web_search_call","id":"ws_1"})")), "input.1.type");
  EXPECT_EQ(refusal_param(more(R"({"type":5})")), "input.1.type");
  EXPECT_EQ(refusal_param(more(R"({"type":"message","role":"tool","content":"x"})")), "input.1.role");
  EXPECT_EQ(refusal_param(more(R"({"content":"no role"})")), "input.1.role");
  EXPECT_EQ(refusal_param(more(R"({"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_file","file_id":"f"}]})")),
            "input.1.content.1.type");
  EXPECT_EQ(refusal_param(more(R"({"role":"user","content":[{"type":"input_audio"}]})")), "input.1.content.0.type");
  EXPECT_EQ(refusal_param(more(R"({"role":"user","content":[{"type":"input_text"}]})")), "input.1.content.0.text");
  EXPECT_EQ(refusal_param(more(R"({"role":"user","content":[]})")), "input.1.content");
  EXPECT_EQ(refusal_param(more(R"({"role":"user","content":[{"type":"input_image","file_id":"file_1"}]})")), "input.1.content.0.file_id");
  EXPECT_EQ(refusal_param(more(R"({"role":"user","content":[{"type":"input_image","image_url":"ftp://x/a.png"}]})")), "input.1.content.0.image_url");
  EXPECT_EQ(refusal_param(more(R"({"role":"user","content":[{"type":"input_image"}]})")), "input.1.content.0.image_url");
  EXPECT_EQ(refusal_param(more(R"({"role":"system","content":[{"type":"input_image","image_url":"https://x"}]})")), "input.1.content.0.type");
  EXPECT_EQ(refusal_param(more(R"({"role":"assistant","content":[{"type":"input_image"}]})")), "input.1.content.0.type");
  EXPECT_EQ(refusal_param(more(R"({"role":"assistant","content":5})")), "input.1.content");
  EXPECT_EQ(refusal_param(more(R"({"type":"function_call","name":"f","arguments":"{}"})")), "input.1.call_id");
  EXPECT_EQ(refusal_param(more(R"({"type":"function_call","call_id":"c","arguments":"{}"})")), "input.1.name");
  EXPECT_EQ(refusal_param(more(R"({"type":"function_call","call_id":"c","name":"f","arguments":"[1]"})")), "input.1.arguments");
  EXPECT_EQ(refusal_param(more(R"({"type":"function_call","call_id":"c","name":"f","arguments":{"a":1}})")), "input.1.arguments");
  EXPECT_EQ(refusal_param(more(R"({"type":"function_call_output","output":"x"})")), "input.1.call_id");
  EXPECT_EQ(refusal_param(more(R"({"type":"function_call_output","call_id":"c"})")), "input.1.output");
  EXPECT_EQ(refusal_param(more(R"({"type":"function_call_output","call_id":"c","output":[{"type":"input_file","file_id":"f"}]})")),
            "input.1.output.0.type");
}

}  // namespace anthropic_upstream_responses_request_test
