// The simulator's Anthropic Messages API (POST /v1/messages): the request parse, the whole message,
// the stream's events in Anthropic's order and shapes, tool_use answers, and the error shapes.
#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/content.hpp"
#include "sim/messages.hpp"
#include "sim/metrics.hpp"
#include "sse/parser.hpp"

using namespace sluice;
namespace json = boost::json;

namespace {

const std::string msg_tools =
    R"("tools":[{"name":"get_weather","input_schema":{"type":"object"}},{"name":"get_time","input_schema":{"type":"object"}}])";

std::string msg_body(const std::string& extra, bool stream = false) {
  return R"({"model":"claude-sim","max_tokens":1024,"stream":)" + std::string(stream ? "true" : "false") +
         R"(,"messages":[{"role":"user","content":"Hello there, what is the weather?"}])" + extra + "}";
}

sim::completion_request msg_parse(const std::string& body) {
  auto r = sim::parse_messages(body, 7);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.err().message);
  return r ? *r : sim::completion_request{};
}

struct msg_event {
  std::string type;
  json::value data;
};

std::vector<msg_event> msg_events(const std::string& stream) {
  std::vector<msg_event> out;
  sse::parser p;
  auto r = p.feed(stream, [&](const sse::event_view& e) { out.push_back({std::string(e.type), json::parse(e.data)}); });
  EXPECT_TRUE(r.has_value());
  return out;
}

std::vector<std::string> msg_types(const std::vector<msg_event>& ev) {
  std::vector<std::string> out;
  for (const auto& e : ev) out.push_back(e.type);
  return out;
}

// The stream as the simulator sends it without faults, with `content` as the output when given.
std::string msg_render(const sim::completion_request& req, std::uint64_t tokens, std::uint64_t token_size,
                       const std::optional<std::string>& content = std::nullopt) {
  sim::choice_set cs(req, tokens, token_size, content);
  std::string out;
  EXPECT_TRUE(cs.has_role_chunk());
  EXPECT_FALSE(cs.has_done_marker());
  cs.append_role_chunks(out);
  for (std::uint64_t i = 0; i <= cs.steps(); ++i) cs.append_step(out, i);
  return out;
}

std::string param_of(const std::string& body) {
  auto r = sim::parse_messages(body, 7);
  EXPECT_FALSE(r.has_value()) << body;
  return r ? "" : r.err().param;
}

}  // namespace

TEST(SimMessages, ParsesTheRequest) {
  auto r = msg_parse(msg_body(R"(,"system":"You are terse.","stop_sequences":["\n\n"],"temperature":0.2,"n":5)", true));
  EXPECT_EQ(r.kind, sim::api::messages);
  EXPECT_EQ(r.model, "claude-sim");
  EXPECT_TRUE(r.stream);
  ASSERT_TRUE(r.max_tokens);
  EXPECT_EQ(*r.max_tokens, 1024u);
  EXPECT_EQ(r.n, 1u) << "the Messages API has no n";
  EXPECT_FALSE(r.include_usage);
  EXPECT_EQ(r.tool_call, "");
  // The system prompt (14 bytes) and the message (33 bytes) counted like chat: ~4 bytes a token,
  // plus 4 per message.
  EXPECT_EQ(r.prompt_tokens, (14u + 33u + 3u) / 4u + 4u);
  // Content blocks count their text; system blocks too.
  auto blocks = msg_parse(R"({"model":"m","max_tokens":1,"system":[{"type":"text","text":"abcd"}],"messages":[)"
                          R"({"role":"user","content":[{"type":"text","text":"abcdefgh"}]},)"
                          R"({"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]},)"
                          R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"abcd"}]}]})");
  EXPECT_EQ(blocks.prompt_tokens, (4u + 8u + 2u + 4u + 3u) / 4u + 12u);
  // The hash differs from the chat route's for the same bytes, and follows the seed.
  EXPECT_NE(sim::parse_messages(msg_body(""), 8)->hash, r.hash);
}

TEST(SimMessages, RequiredFieldsAndBounds) {
  EXPECT_EQ(param_of(R"({"max_tokens":10,"messages":[{"role":"user","content":"x"}]})"), "model");
  EXPECT_EQ(param_of(R"({"model":"m","messages":[{"role":"user","content":"x"}]})"), "max_tokens");
  for (std::string v : {"0", "-1", "1.5", "\"10\"", "2147483648", "null"})
    EXPECT_EQ(param_of(R"({"model":"m","max_tokens":)" + v + R"(,"messages":[{"role":"user","content":"x"}]})"),
              "max_tokens")
        << v;
  EXPECT_TRUE(sim::parse_messages(R"({"model":"m","max_tokens":2147483647,"messages":[{"role":"user","content":"x"}]})", 1));
  EXPECT_EQ(param_of(R"({"model":"m","max_tokens":1,"messages":[]})"), "messages");
  EXPECT_EQ(param_of(R"({"model":"m","max_tokens":1,"messages":[{"role":"system","content":"x"}]})"), "messages");
  EXPECT_EQ(param_of(R"({"model":"m","max_tokens":1,"messages":[{"role":"user","content":3}]})"), "messages");
  EXPECT_EQ(param_of(R"({"model":"m","max_tokens":1,"system":3,"messages":[{"role":"user","content":"x"}]})"), "system");
  EXPECT_EQ(param_of(msg_body(R"(,"stream":"yes")")), "stream");
  auto not_json = sim::parse_messages("{", 1);
  ASSERT_FALSE(not_json.has_value());
  EXPECT_EQ(not_json.err().code, errc::bad_request);
  auto r = sim::parse_messages(R"({"model":"m","messages":[{"role":"user","content":"x"}]})", 1);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.err().message.find("max_tokens"), std::string::npos) << "the message names the field";
}

TEST(SimMessages, ToolChoice) {
  EXPECT_EQ(msg_parse(msg_body("," + msg_tools + R"(,"tool_choice":{"type":"any"})")).tool_call, "get_weather");
  EXPECT_EQ(msg_parse(msg_body("," + msg_tools + R"(,"tool_choice":{"type":"tool","name":"get_time"})")).tool_call,
            "get_time");
  for (std::string extra : {"," + msg_tools, "," + msg_tools + R"(,"tool_choice":{"type":"auto"})",
                            "," + msg_tools + R"(,"tool_choice":{"type":"none"})", std::string(R"(,"tool_choice":{"type":"any"})")})
    EXPECT_EQ(msg_parse(msg_body(extra)).tool_call, "") << extra;
  EXPECT_EQ(param_of(msg_body(R"(,"tools":{})")), "tools");
  EXPECT_EQ(param_of(msg_body(R"(,"tools":[{"input_schema":{}}])")), "tools");
  EXPECT_EQ(param_of(msg_body("," + msg_tools + R"(,"tool_choice":"any")")), "tool_choice");
  EXPECT_EQ(param_of(msg_body("," + msg_tools + R"(,"tool_choice":{"type":"tool"})")), "tool_choice");
  EXPECT_EQ(param_of(msg_body("," + msg_tools + R"(,"tool_choice":{"type":"required"})")), "tool_choice");
}

TEST(SimMessages, WholeMessage) {
  auto req = msg_parse(msg_body(""));
  sim::choice_set cs(req, 5, 4);
  const std::string text = cs.body();
  auto body = json::parse(text).as_object();
  EXPECT_TRUE(body.at("id").as_string().starts_with("msg_"));
  EXPECT_EQ(body.at("type"), "message");
  EXPECT_EQ(body.at("role"), "assistant");
  EXPECT_EQ(body.at("model"), "claude-sim");
  ASSERT_EQ(body.at("content").as_array().size(), 1u);
  EXPECT_EQ(body.at("content").at(0).at("type"), "text");
  EXPECT_EQ(body.at("content").at(0).at("text").as_string().size(), 20u);
  EXPECT_EQ(body.at("stop_reason"), "end_turn");
  EXPECT_TRUE(body.at("stop_sequence").is_null());
  EXPECT_EQ(body.at("usage").at("input_tokens"), static_cast<std::int64_t>(req.prompt_tokens));
  EXPECT_EQ(body.at("usage").at("output_tokens"), 5);
  EXPECT_EQ(body.size(), 8u) << text;
  sim::choice_set again(req, 5, 4);
  EXPECT_EQ(again.body(), text) << "deterministic";

  // max_tokens below the token count: cut, stop_reason max_tokens.
  auto cut = msg_parse(R"({"model":"m","max_tokens":3,"messages":[{"role":"user","content":"x"}]})");
  sim::choice_set short_cs(cut, 16, 4);
  auto short_body = json::parse(short_cs.body());
  EXPECT_EQ(short_body.at("stop_reason"), "max_tokens");
  EXPECT_EQ(short_body.at("usage").at("output_tokens"), 3);
  EXPECT_EQ(short_body.at("content").at(0).at("text").as_string().size(), 12u);
}

TEST(SimMessages, WholeToolUse) {
  auto req = msg_parse(msg_body("," + msg_tools + R"(,"tool_choice":{"type":"any"})"));
  const std::optional<std::string> args = R"({"city":"Oslo"})";
  sim::choice_set cs(req, 16, 4, args);
  auto body = json::parse(cs.body());
  const auto& block = body.at("content").at(0);
  EXPECT_EQ(block.at("type"), "tool_use");
  EXPECT_TRUE(block.at("id").as_string().starts_with("toolu_"));
  EXPECT_EQ(block.at("name"), "get_weather");
  EXPECT_EQ(block.at("input"), json::parse(*args));
  EXPECT_EQ(body.at("stop_reason"), "tool_use");
  EXPECT_EQ(body.at("usage").at("output_tokens"), 4);

  sim::choice_set none(req, 16, 4);  // no content: an empty input
  EXPECT_EQ(json::parse(none.body()).at("content").at(0).at("input"), json::object());
  // Arguments that are not JSON (or that max_tokens cut) become the input as a string.
  const std::optional<std::string> broken = "not json";
  sim::choice_set odd(req, 16, 4, broken);
  EXPECT_EQ(json::parse(odd.body()).at("content").at(0).at("input"), "not json");
  auto cut = msg_parse(R"({"model":"m","max_tokens":2,"messages":[{"role":"user","content":"x"}],)" + msg_tools +
                       R"(,"tool_choice":{"type":"any"}})");
  sim::choice_set cut_cs(cut, 16, 4, args);
  auto cut_body = json::parse(cut_cs.body());
  EXPECT_EQ(cut_body.at("stop_reason"), "max_tokens");
  EXPECT_EQ(cut_body.at("content").at(0).at("input"), R"({"city":)");  // two 4-byte tokens
}

TEST(SimMessages, StreamEventsInAnthropicsOrder) {
  auto req = msg_parse(msg_body("", true));
  auto ev = msg_events(msg_render(req, 3, 4));
  EXPECT_EQ(msg_types(ev), (std::vector<std::string>{"message_start", "content_block_start", "ping",
                                                     "content_block_delta", "content_block_delta", "content_block_delta",
                                                     "content_block_stop", "message_delta", "message_stop"}));
  for (const auto& e : ev) EXPECT_EQ(e.data.at("type").as_string(), std::string_view(e.type));
  const auto& msg = ev[0].data.at("message");
  EXPECT_TRUE(msg.at("id").as_string().starts_with("msg_"));
  EXPECT_EQ(msg.at("type"), "message");
  EXPECT_EQ(msg.at("role"), "assistant");
  EXPECT_EQ(msg.at("model"), "claude-sim");
  EXPECT_EQ(msg.at("content"), json::array());
  EXPECT_TRUE(msg.at("stop_reason").is_null());
  EXPECT_TRUE(msg.at("stop_sequence").is_null());
  EXPECT_EQ(msg.at("usage").at("input_tokens"), static_cast<std::int64_t>(req.prompt_tokens));
  EXPECT_EQ(msg.at("usage").at("output_tokens"), 1);
  EXPECT_EQ(ev[1].data, json::parse(R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})"));
  std::string text;
  for (int i = 3; i < 6; ++i) {
    EXPECT_EQ(ev[i].data.at("index"), 0);
    EXPECT_EQ(ev[i].data.at("delta").at("type"), "text_delta");
    text += ev[i].data.at("delta").at("text").as_string();
  }
  EXPECT_EQ(text.size(), 12u);
  EXPECT_EQ(ev[6].data, json::parse(R"({"type":"content_block_stop","index":0})"));
  EXPECT_EQ(ev[7].data,
            json::parse(R"({"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":3}})"));
  // The whole answer says the same text.
  sim::choice_set cs(req, 3, 4);
  EXPECT_EQ(json::parse(cs.body()).at("content").at(0).at("text").as_string(), std::string_view(text));
  EXPECT_EQ(json::parse(cs.body()).at("id"), msg.at("id"));
}

TEST(SimMessages, StreamCutByMaxTokens) {
  auto req = msg_parse(R"({"model":"m","max_tokens":2,"stream":true,"messages":[{"role":"user","content":"x"}]})");
  auto ev = msg_events(msg_render(req, 16, 4));
  ASSERT_EQ(ev.size(), 3u + 2u + 3u);
  EXPECT_EQ(ev[6].data.at("delta").at("stop_reason"), "max_tokens");
  EXPECT_EQ(ev[6].data.at("usage").at("output_tokens"), 2);
}

TEST(SimMessages, StreamToolUse) {
  auto req = msg_parse(msg_body("," + msg_tools + R"(,"tool_choice":{"type":"tool","name":"get_time"})", true));
  const std::string args = R"({"tz":"Europe/Oslo"})";  // 20 bytes: 4 pieces of 5
  auto ev = msg_events(msg_render(req, 16, 5, args));
  ASSERT_EQ(ev.size(), 3u + 4u + 3u);
  const auto& block = ev[1].data.at("content_block");
  EXPECT_EQ(block.at("type"), "tool_use");
  EXPECT_TRUE(block.at("id").as_string().starts_with("toolu_"));
  EXPECT_EQ(block.at("name"), "get_time");
  EXPECT_EQ(block.at("input"), json::object());
  std::string joined;
  for (int i = 3; i < 7; ++i) {
    EXPECT_EQ(ev[i].data.at("delta").at("type"), "input_json_delta");
    joined += ev[i].data.at("delta").at("partial_json").as_string();
  }
  EXPECT_EQ(joined, args);
  EXPECT_EQ(ev[8].data.at("delta").at("stop_reason"), "tool_use");
  EXPECT_EQ(ev[8].data.at("usage").at("output_tokens"), 4);
}

TEST(SimMessages, ErrorShapes) {
  EXPECT_EQ(json::parse(sim::anthropic_error_body("overloaded_error", "Overloaded")),
            json::parse(R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})"));
  EXPECT_EQ(sim::anthropic_error_type(400), "invalid_request_error");
  EXPECT_EQ(sim::anthropic_error_type(401), "authentication_error");
  EXPECT_EQ(sim::anthropic_error_type(403), "permission_error");
  EXPECT_EQ(sim::anthropic_error_type(404), "not_found_error");
  EXPECT_EQ(sim::anthropic_error_type(413), "request_too_large");
  EXPECT_EQ(sim::anthropic_error_type(429), "rate_limit_error");
  EXPECT_EQ(sim::anthropic_error_type(500), "api_error");
  EXPECT_EQ(sim::anthropic_error_type(503), "api_error");
  EXPECT_EQ(sim::anthropic_error_type(529), "overloaded_error");
  // The mid-stream "malformed" fault on this API is Anthropic's in-band error event.
  auto req = msg_parse(msg_body("", true));
  sim::generator g(req, 4, 4);
  std::string out;
  g.append_malformed_event(out);
  auto ev = msg_events(out);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].type, "error");
  EXPECT_EQ(ev[0].data, json::parse(R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})"));
}

TEST(SimMessages, RoutesAndMetricsByRoute) {
  EXPECT_EQ(sim::route_of(sim::api::messages), "/v1/messages");
  EXPECT_EQ(sim::route_of(sim::api::chat), "/v1/chat/completions");
  sim::engine_sample s;
  s.requests_by_api[static_cast<std::size_t>(sim::api::messages)] = 3;
  const std::string text = sim::engine_metrics_text("sim-1", s);
  EXPECT_NE(text.find("# TYPE sim_requests_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("sim_requests_total{model_name=\"sim-1\",route=\"/v1/messages\"} 3\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("sim_requests_total{model_name=\"sim-1\",route=\"/v1/chat/completions\"} 0\n"),
            std::string::npos);
}

TEST(SimMessages, CountTokensIsTheParsersPromptEstimateAndNeedsNoMaxTokens) {
  const std::string ask = R"({"model":"claude-sim","messages":[{"role":"user","content":"hello there"}]})";
  auto counted = sim::count_tokens_body(ask);
  ASSERT_TRUE(counted) << counted.err().message;
  auto parsed = sim::parse_messages(R"({"model":"claude-sim","max_tokens":5,"messages":[{"role":"user","content":"hello there"}]})", 0);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(json::parse(*counted).at("input_tokens").to_number<std::uint64_t>(), parsed->prompt_tokens);
  auto no_model = sim::count_tokens_body(R"({"messages":[{"role":"user","content":"hi"}]})");
  ASSERT_FALSE(no_model);
  EXPECT_EQ(no_model.err().param, "model");
  EXPECT_FALSE(sim::count_tokens_body(R"({"model":"m","messages":[]})"));
}
