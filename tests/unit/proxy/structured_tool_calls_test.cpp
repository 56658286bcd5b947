// proxy/structured_output on tool-call answers: a choice that calls a tool is not judged against the
// response schema (whole and streamed, chat and responses); with nothing left to judge the verdict
// says "skipped; tool_calls", and text choices beside it are still judged.
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

#include "proxy/structured/structured_output.hpp"

using namespace sluice;
using namespace sluice::proxy;
namespace json = boost::json;

namespace {

output_contract city_contract(api which, schema_policy p, std::uint32_t n = 1) {
  static schema::schema_cache cache;
  output_schema_request w;
  w.schema = json::parse(R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})");
  w.param = "response_format.json_schema.schema";
  w.name = "city";
  w.choices = n;
  schema_options o;
  o.policy = p;
  auto c = make_output_contract(which, std::move(w), {{}, "1"}, o, cache);
  EXPECT_TRUE(c.has_value()) << (c ? "" : c.err().message);
  return **c;
}

json::object as_obj(const std::string& s) { return json::parse(s).as_object(); }

const std::string kToolMessage =
    R"({"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]})";

}  // namespace

TEST(StructuredToolCalls, WholeChatToolCallIsSkipped) {
  auto c = city_contract(api::chat_completions, schema_policy::reject);
  auto v = check_whole(c, R"({"choices":[{"index":0,"message":)" + kToolMessage + R"(,"finish_reason":"tool_calls"}]})");
  EXPECT_FALSE(v);
  EXPECT_TRUE(v.tool_calls);
  EXPECT_EQ(verdict_header_value(v), "skipped; tool_calls");
  EXPECT_EQ(verdict_json(v), R"({"valid":true,"skipped":"tool_calls"})");
  // Without tool calls, no content is still no output text.
  auto none = check_whole(c, R"({"choices":[{"index":0,"message":{"role":"assistant","content":null}}]})");
  EXPECT_TRUE(none);
  EXPECT_FALSE(none.tool_calls);
  // An empty tool_calls array is not a call.
  auto empty = check_whole(c, R"({"choices":[{"index":0,"message":{"content":null,"tool_calls":[]}}]})");
  EXPECT_TRUE(empty);
}

TEST(StructuredToolCalls, WholeChatTextChoicesBesideAToolCallAreJudged) {
  auto c = city_contract(api::chat_completions, schema_policy::reject, 2);
  auto good = check_whole(c, R"({"choices":[{"index":0,"message":)" + kToolMessage +
                                 R"(},{"index":1,"message":{"content":"{\"city\":\"Oslo\"}"}}]})");
  EXPECT_FALSE(good);
  EXPECT_FALSE(good.tool_calls);
  EXPECT_EQ(verdict_header_value(good), "valid");
  auto bad = check_whole(c, R"({"choices":[{"index":0,"message":)" + kToolMessage +
                                R"(},{"index":1,"message":{"content":"{}"}}]})");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad.choice, 1u);
}

TEST(StructuredToolCalls, WholeResponsesFunctionCallIsSkipped) {
  auto c = city_contract(api::responses, schema_policy::annotate);
  auto v = check_whole(
      c, R"({"status":"completed","output":[{"type":"function_call","call_id":"call_1","name":"f","arguments":"{}"}]})");
  EXPECT_FALSE(v);
  EXPECT_TRUE(v.tool_calls);
  EXPECT_EQ(verdict_header_value(v), "skipped; tool_calls");
  auto text = check_whole(c, R"({"output":[{"type":"message","content":[{"type":"output_text","text":"{}"}]}]})");
  EXPECT_TRUE(text);  // a text answer is still judged
}

TEST(StructuredToolCalls, ChatStreamToolCallIsNotAViolation) {
  auto c = city_contract(api::chat_completions, schema_policy::reject);
  stream_check chk(c);
  EXPECT_FALSE(chk.on_event(as_obj(
      R"({"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]},"finish_reason":null}]})")));
  EXPECT_FALSE(chk.on_event(as_obj(
      R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]},"finish_reason":null}]})")));
  EXPECT_FALSE(chk.on_event(as_obj(R"({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]})")));
  EXPECT_TRUE(chk.finished());
  EXPECT_FALSE(chk.on_done());
  EXPECT_FALSE(chk.verdict().has_value());
  EXPECT_TRUE(chk.full_verdict().tool_calls);

  // finish_reason "tool_calls" alone marks the call too; annotate reports the skip.
  auto a = city_contract(api::chat_completions, schema_policy::annotate);
  stream_check ann(a);
  EXPECT_FALSE(ann.on_event(as_obj(R"({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]})")));
  EXPECT_EQ(ann.final_event(), "event: sluice.schema\ndata: {\"valid\":true,\"skipped\":\"tool_calls\"}\n\n");

  // A text stream that ends with "stop" and no document is still a violation.
  stream_check text(c);
  auto e = text.on_event(as_obj(R"({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})"));
  EXPECT_TRUE(e.has_value());
}

TEST(StructuredToolCalls, ChatStreamTextChoiceBesideAToolCallIsJudged) {
  auto c = city_contract(api::chat_completions, schema_policy::annotate, 2);
  stream_check chk(c);
  EXPECT_FALSE(chk.on_event(as_obj(R"({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]})")));
  EXPECT_FALSE(chk.on_event(as_obj(R"({"choices":[{"index":1,"delta":{"content":"{}"},"finish_reason":"stop"}]})")));
  EXPECT_TRUE(chk.verdict().has_value());
  EXPECT_EQ(chk.full_verdict().choice, 1u);
  EXPECT_FALSE(chk.full_verdict().tool_calls);
}

TEST(StructuredToolCalls, ResponsesStreamFunctionCallIsNotAViolation) {
  auto c = city_contract(api::responses, schema_policy::reject);
  stream_check chk(c);
  EXPECT_FALSE(chk.on_event(as_obj(R"({"type":"response.created","response":{}})")));
  EXPECT_FALSE(chk.on_event(as_obj(
      R"({"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","arguments":"","name":"f"}})")));
  EXPECT_FALSE(chk.on_event(as_obj(R"({"type":"response.function_call_arguments.delta","delta":"{}"})")));
  EXPECT_FALSE(chk.on_event(as_obj(R"({"type":"response.completed","response":{}})")));
  EXPECT_TRUE(chk.finished());
  EXPECT_FALSE(chk.verdict().has_value());
  EXPECT_TRUE(chk.full_verdict().tool_calls);
  // A message item is judged as before.
  stream_check msg(c);
  EXPECT_FALSE(msg.on_event(as_obj(R"({"type":"response.output_item.added","item":{"type":"message"}})")));
  EXPECT_TRUE(msg.on_event(as_obj(R"({"type":"response.completed","response":{}})")).has_value());
}
