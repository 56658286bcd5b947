// The simulator's tool calls: when a request calls a tool (tools + tool_choice, or x-sim-tool-call),
// and the chat / Responses wire shapes of the call, streamed and whole.
#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/content.hpp"
#include "sim/control.hpp"
#include "sse/parser.hpp"

using namespace sluice;
namespace json = boost::json;

namespace {

const std::string chat_tools =
    R"("tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}},)"
    R"({"type":"function","function":{"name":"get_time","parameters":{"type":"object"}}}])";
const std::string responses_tools =
    R"("tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}},)"
    R"({"type":"function","name":"get_time","parameters":{"type":"object"}}])";

std::string chat(const std::string& extra, bool stream = true) {
  return R"({"model":"sim-1","stream":)" + std::string(stream ? "true" : "false") +
         R"(,"messages":[{"role":"user","content":"weather?"}])" + extra + "}";
}
std::string responses(const std::string& extra, bool stream = true) {
  return R"({"model":"sim-1","stream":)" + std::string(stream ? "true" : "false") + R"(,"input":"weather?")" + extra +
         "}";
}

sim::completion_request parse(sim::api kind, const std::string& body) {
  auto r = sim::parse_completion(kind, body, 7);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.err().message);
  return r ? *r : sim::completion_request{};
}

struct event {
  std::string type;
  json::value data;
};

std::vector<event> events(const std::string& stream) {
  std::vector<event> out;
  sse::parser p;
  auto r = p.feed(stream, [&](const sse::event_view& e) {
    out.push_back({std::string(e.type), e.data == "[DONE]" ? json::value("[DONE]") : json::parse(e.data)});
  });
  EXPECT_TRUE(r.has_value());
  return out;
}

std::string render(const sim::completion_request& req, std::uint64_t token_size, const std::string& content) {
  const std::optional<std::string> text = content;  // the generators keep a pointer to it
  sim::choice_set cs(req, 16, token_size, text);
  std::string out;
  if (cs.has_role_chunk()) cs.append_role_chunks(out);
  for (std::uint64_t i = 0; i <= cs.steps(); ++i) cs.append_step(out, i);
  if (req.include_usage) cs.append_usage_chunk(out);
  if (cs.has_done_marker()) sim::generator::append_done(out);
  return out;
}

}  // namespace

TEST(SimToolCall, WhenTheModelCallsATool) {
  // "required": the first function tool; a named choice: that one.
  EXPECT_EQ(parse(sim::api::chat, chat("," + chat_tools + R"(,"tool_choice":"required")")).tool_call, "get_weather");
  EXPECT_EQ(parse(sim::api::chat, chat("," + chat_tools +
                                       R"(,"tool_choice":{"type":"function","function":{"name":"get_time"}})"))
                .tool_call,
            "get_time");
  EXPECT_EQ(parse(sim::api::responses, responses("," + responses_tools + R"(,"tool_choice":"required")")).tool_call,
            "get_weather");
  EXPECT_EQ(parse(sim::api::responses,
                  responses("," + responses_tools + R"(,"tool_choice":{"type":"function","name":"get_time"})"))
                .tool_call,
            "get_time");
  // auto, none, absent, or no tools: a text answer.
  for (std::string extra : {"," + chat_tools, "," + chat_tools + R"(,"tool_choice":"auto")",
                            "," + chat_tools + R"(,"tool_choice":"none")", std::string(R"(,"tool_choice":"required")")})
    EXPECT_EQ(parse(sim::api::chat, chat(extra)).tool_call, "") << extra;
  // Bad shapes are 400s naming the field.
  auto bad = sim::parse_completion(sim::api::chat, chat(R"(,"tools":{})"), 7);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.err().param, "tools");
  bad = sim::parse_completion(sim::api::chat,
                              chat("," + chat_tools + R"(,"tool_choice":{"type":"function","function":{}})"), 7);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.err().param, "tool_choice");
}

TEST(SimToolCall, HeaderAndScriptForceACall) {
  sim::options o;
  sim::header_overrides h;
  h.tool_call = "lookup";
  auto s = sim::resolve_settings(o, h);
  ASSERT_TRUE(s.has_value());
  ASSERT_TRUE(s->tool_call);
  EXPECT_EQ(*s->tool_call, "lookup");
  h.tool_call = "not a name";
  s = sim::resolve_settings(o, h);
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.err().message.find("x-sim-tool-call"), std::string::npos);

  auto u = sim::parse_control(R"({"script":[{"tool_call":"lookup","content":"{\"q\":1}"}]})", o);
  ASSERT_TRUE(u.has_value()) << u.err().message;
  EXPECT_EQ(u->script[0].tool_call, "lookup");
  auto refused = sim::parse_control(R"({"script":[{"tool_call":"a b"}]})", o);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.err().param, "script[0].tool_call");
}

TEST(SimToolCall, ChatStreamShape) {
  auto req = parse(sim::api::chat, chat("," + chat_tools + R"(,"tool_choice":"required","stream_options":{"include_usage":true})"));
  const std::string args = R"({"city":"Oslo","unit":"C"})";  // 26 bytes: 4 pieces of 8
  const std::string stream = render(req, 8, args);
  SCOPED_TRACE(stream);
  auto ev = events(stream);
  ASSERT_EQ(ev.size(), 1u + 4u + 1u + 1u + 1u);  // role+call head, 4 argument pieces, finish, usage, [DONE]
  const auto& first = ev[0].data.at("choices").at(0).at("delta");
  EXPECT_EQ(first.at("role"), "assistant");
  EXPECT_TRUE(first.at("content").is_null());
  const auto& call = first.at("tool_calls").at(0);
  EXPECT_EQ(call.at("index"), 0);
  EXPECT_TRUE(call.at("id").as_string().starts_with("call_"));
  EXPECT_EQ(call.at("type"), "function");
  EXPECT_EQ(call.at("function").at("name"), "get_weather");
  EXPECT_EQ(call.at("function").at("arguments"), "");
  std::string joined;
  for (std::size_t i = 1; i <= 4; ++i) {
    const auto& d = ev[i].data.at("choices").at(0).at("delta");
    EXPECT_FALSE(d.as_object().contains("content"));
    const auto& piece = d.at("tool_calls").at(0);
    EXPECT_EQ(piece.at("index"), 0);
    EXPECT_FALSE(piece.as_object().contains("id"));
    joined += piece.at("function").at("arguments").as_string();
  }
  EXPECT_EQ(joined, args);
  EXPECT_EQ(ev[5].data.at("choices").at(0).at("finish_reason"), "tool_calls");
  EXPECT_EQ(ev[6].data.at("usage").at("completion_tokens"), 4);  // the argument tokens
  EXPECT_EQ(ev[7].data, "[DONE]");
}

TEST(SimToolCall, ChatWholeAndDefaultArguments) {
  auto req = parse(sim::api::chat, chat("," + chat_tools + R"(,"tool_choice":"required")", false));
  sim::choice_set cs(req, 16, 4);  // no content: the arguments are "{}"
  const std::string text = cs.body();
  auto body = json::parse(text);
  const auto& choice = body.at("choices").at(0);
  EXPECT_EQ(choice.at("finish_reason"), "tool_calls");
  EXPECT_TRUE(choice.at("message").at("content").is_null());
  const auto& call = choice.at("message").at("tool_calls").at(0);
  EXPECT_TRUE(call.at("id").as_string().starts_with("call_"));
  EXPECT_EQ(call.at("type"), "function");
  EXPECT_EQ(call.at("function").at("name"), "get_weather");
  EXPECT_EQ(call.at("function").at("arguments"), "{}");
  EXPECT_EQ(body.at("usage").at("completion_tokens"), 1);
  // The same request streamed calls with the same id (the id comes from the body hash).
  sim::choice_set again(req, 16, 4);
  EXPECT_EQ(again.body(), text);
}

TEST(SimToolCall, ResponsesStreamShape) {
  auto req = parse(sim::api::responses, responses("," + responses_tools + R"(,"tool_choice":"required")"));
  const std::string args = R"({"city":"Oslo"})";  // 15 bytes: 3 pieces of 5
  auto ev = events(render(req, 5, args));
  std::vector<std::string> types;
  for (const auto& e : ev) types.push_back(e.type);
  EXPECT_EQ(types, (std::vector<std::string>{"response.created", "response.in_progress", "response.output_item.added",
                                             "response.function_call_arguments.delta",
                                             "response.function_call_arguments.delta",
                                             "response.function_call_arguments.delta",
                                             "response.function_call_arguments.done", "response.output_item.done",
                                             "response.completed"}));
  for (std::size_t i = 0; i < ev.size(); ++i) {
    EXPECT_EQ(ev[i].data.at("sequence_number"), static_cast<std::int64_t>(i));
    EXPECT_EQ(ev[i].data.at("type").as_string(), std::string_view(ev[i].type));
  }
  const auto& added = ev[2].data.at("item");
  EXPECT_EQ(added.at("type"), "function_call");
  EXPECT_EQ(added.at("status"), "in_progress");
  EXPECT_EQ(added.at("arguments"), "");
  EXPECT_EQ(added.at("name"), "get_weather");
  EXPECT_TRUE(added.at("call_id").as_string().starts_with("call_"));
  EXPECT_TRUE(added.at("id").as_string().starts_with("fc_"));
  std::string joined;
  for (int i = 3; i < 6; ++i) {
    EXPECT_EQ(ev[i].data.at("item_id"), added.at("id"));
    joined += ev[i].data.at("delta").as_string();
  }
  EXPECT_EQ(joined, args);
  EXPECT_EQ(ev[6].data.at("arguments").as_string(), std::string_view(args));
  EXPECT_EQ(ev[7].data.at("item").at("status"), "completed");
  EXPECT_EQ(ev[7].data.at("item").at("arguments").as_string(), std::string_view(args));
  const auto& done = ev[8].data.at("response");
  EXPECT_EQ(done.at("status"), "completed");
  EXPECT_EQ(done.at("output").at(0), ev[7].data.at("item"));
  EXPECT_EQ(done.at("usage").at("output_tokens"), 3);
}

TEST(SimToolCall, ResponsesWholeAndForcedCall) {
  auto req = parse(sim::api::responses, responses("", false));
  req.tool_call = "forced";  // what x-sim-tool-call sets
  const std::optional<std::string> args = R"({"a":1})";
  sim::choice_set cs(req, 16, 4, args);
  auto body = json::parse(cs.body());
  EXPECT_EQ(body.at("status"), "completed");
  ASSERT_EQ(body.at("output").as_array().size(), 1u);
  const auto& item = body.at("output").at(0);
  EXPECT_EQ(item.at("type"), "function_call");
  EXPECT_EQ(item.at("name"), "forced");
  EXPECT_EQ(item.at("arguments"), R"({"a":1})");
  EXPECT_EQ(body.at("usage").at("output_tokens"), 2);
}

TEST(SimToolCall, LegacyCompletionsNeverCallTools) {
  auto req = parse(sim::api::completion, R"({"model":"m","prompt":"x","tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required"})");
  EXPECT_EQ(req.tool_call, "");
}
