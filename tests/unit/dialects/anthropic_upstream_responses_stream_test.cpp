// The Messages → Responses stream translation (an Anthropic upstream behind /v1/responses) against
// its corpus (tests/data/dialects/anthropic_upstream_responses: each case's upstream Messages
// stream and its expected Responses events), fed whole, split at every byte offset, and byte by
// byte; and the Responses stream's grammar (anthropic_upstream_responses_grammar.hpp) checked on
// every case's output, so a wrong golden file cannot hide a framing bug.
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include "anthropic_upstream_responses_grammar.hpp"
#include "dialect_test_files.hpp"
#include "dialects/anthropic_upstream_responses_stream.hpp"
#include "sse/parser.hpp"

namespace anthropic_upstream_responses_stream_test {

namespace fs = std::filesystem;
namespace json = boost::json;
using sluice::dialects::messages_to_responses_stream;
using sluice::dialects::response_start_info;
using sluice::dialects::testing::read_text;
using sluice::dialects::testing::responses_grammar_violation;

const fs::path corpus_dir = fs::path(SLUICE_TEST_DATA_DIR) / "dialects" / "anthropic_upstream_responses";
const std::string response_id = "resp_0123456789abcdef0123456789abcdef";

std::vector<std::string> corpus_cases() { return sluice::dialects::testing::corpus_cases(corpus_dir); }

// The upstream's bytes fed in the given pieces through the relay's SSE parser into a translator.
std::string translate(std::string_view upstream, const std::vector<std::size_t>& cuts) {
  sluice::sse::parser parser;
  messages_to_responses_stream t(response_start_info{response_id, "asked-model", 1700000000});
  return sluice::dialects::testing::translate_in_pieces(t, parser, upstream, cuts);
}

struct event {
  std::string type;
  json::object data;
};

std::vector<event> events_of(std::string_view translated) {
  std::vector<event> out;
  sluice::sse::parser parser(16 << 20);
  auto r = parser.feed(translated, [&](const sluice::sse::event_view& ev) {
    out.push_back({std::string(ev.type), json::parse(ev.data).as_object()});
  });
  EXPECT_TRUE(static_cast<bool>(r));
  return out;
}

std::vector<event> case_events(const std::string& name) { return events_of(translate(read_text(corpus_dir / (name + ".upstream.sse")), {})); }

TEST(AnthropicUpstreamResponsesStream, EveryCaseMatchesItsExpectedTranslation) {
  const auto cases = corpus_cases();
  ASSERT_GE(cases.size(), 12u);
  const bool regenerate = std::getenv("SLUICE_REGENERATE_CORPUS") != nullptr;
  for (const auto& name : cases) {
    const auto got = translate(read_text(corpus_dir / (name + ".upstream.sse")), {});
    const auto expected_path = corpus_dir / (name + ".expected.sse");
    if (regenerate) std::ofstream(expected_path, std::ios::binary) << got;
    EXPECT_EQ(got, read_text(expected_path)) << name;
    EXPECT_EQ(responses_grammar_violation(got), "") << name;
  }
}

TEST(AnthropicUpstreamResponsesStream, ATranslationDoesNotDependOnWhereTheUpstreamsBytesAreSplit) {
  for (const auto& name : corpus_cases()) {
    const auto upstream = read_text(corpus_dir / (name + ".upstream.sse"));
    const auto whole = translate(upstream, {});
    for (std::size_t cut = 1; cut < upstream.size(); ++cut) ASSERT_EQ(translate(upstream, {cut}), whole) << name << " split at " << cut;
    std::vector<std::size_t> every;
    for (std::size_t cut = 1; cut < upstream.size(); ++cut) every.push_back(cut);
    EXPECT_EQ(translate(upstream, every), whole) << name << " fed byte by byte";
  }
}

const json::object& final_response(const std::vector<event>& events) { return events.back().data.at("response").as_object(); }

TEST(AnthropicUpstreamResponsesStream, StopReasonsDecideCompletedOrIncomplete) {
  auto outcome = [](const std::string& name) {
    const auto events = case_events(name);
    const auto& r = final_response(events);
    return events.back().type + "/" + std::string(r.at("status").as_string()) + "/" +
           (r.at("incomplete_details").is_null() ? "-" : std::string(r.at("incomplete_details").at("reason").as_string()));
  };
  EXPECT_EQ(outcome("text"), "response.completed/completed/-");
  EXPECT_EQ(outcome("stop_sequence"), "response.completed/completed/-");
  EXPECT_EQ(outcome("tool_first"), "response.completed/completed/-");
  EXPECT_EQ(outcome("max_tokens"), "response.incomplete/incomplete/max_output_tokens");
  EXPECT_EQ(outcome("refusal"), "response.incomplete/incomplete/content_filter");
}

TEST(AnthropicUpstreamResponsesStream, TheStreamOpensWithTheGatewaysIdAndTheUpstreamsModel) {
  const auto events = case_events("thinking_with_signature");
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events[0].type, "response.created");
  EXPECT_EQ(events[1].type, "response.in_progress");
  const auto& r = events[0].data.at("response");
  EXPECT_EQ(r.at("id"), json::value(response_id));
  EXPECT_EQ(r.at("model"), "claude-opus-4-5");
  EXPECT_EQ(r.at("created_at"), 1700000000);
  EXPECT_TRUE(r.at("usage").is_null());
  EXPECT_EQ(r.at("output"), json::array{});
  messages_to_responses_stream t({response_id, "asked-model", 7});
  std::string out;
  t.on_event("message_start", R"({"type":"message_start","message":{"usage":{}}})", out);
  EXPECT_EQ(events_of(out)[0].data.at("response").at("model"), "asked-model");
  EXPECT_EQ(t.next_sequence_number(), 2);
}

TEST(AnthropicUpstreamResponsesStream, ThinkingIsAReasoningItemAndSignaturesAreDropped) {
  const auto events = case_events("thinking_with_signature");
  const auto& output = final_response(events).at("output").as_array();
  ASSERT_EQ(output.size(), 2u);  // the redacted block is dropped
  EXPECT_EQ(output[0], json::parse(R"({"id":"rs_0123456789abcdef0123456789abcdef_0","type":"reasoning","status":"completed","summary":[],
    "content":[{"type":"reasoning_text","text":"Let me solve this step by step:\n\n1. First break down 27 * 453\n2. 453 = 400 + 50 + 3"}]})"));
  EXPECT_EQ(output[1], json::parse(R"({"id":"msg_0123456789abcdef0123456789abcdef_1","type":"message","status":"completed","role":"assistant",
    "content":[{"type":"output_text","annotations":[],"text":"27 * 453 = 12,231"}]})"));
  for (const auto& e : events) EXPECT_EQ(json::serialize(e.data).find("EqQB"), std::string::npos);
}

TEST(AnthropicUpstreamResponsesStream, ToolUseBlocksAreFunctionCallItems) {
  const auto output = final_response(case_events("parallel_tools")).at("output").as_array();
  EXPECT_EQ(output, json::parse(R"([
    {"id":"fc_0123456789abcdef0123456789abcdef_0","type":"function_call","status":"completed","arguments":"{\"city\": \"Paris\"}",
     "call_id":"toolu_01A","name":"get_weather"},
    {"id":"fc_0123456789abcdef0123456789abcdef_1","type":"function_call","status":"completed","arguments":"{\"zone\": \"CET\"}",
     "call_id":"toolu_01B","name":"get_time"}])"));
  const auto at_start = final_response(case_events("tool_input_at_start")).at("output").as_array();
  EXPECT_EQ(json::parse(at_start.back().at("arguments").as_string()), json::parse(R"({"id":42,"deep":true})"));
}

TEST(AnthropicUpstreamResponsesStream, ATextBlockIsAMessageItemWithItsEvents) {
  std::vector<std::string> types;
  for (const auto& e : case_events("text")) types.push_back(e.type);
  EXPECT_EQ(types, (std::vector<std::string>{"response.created", "response.in_progress", "response.output_item.added",
                                             "response.content_part.added", "response.output_text.delta", "response.output_text.delta",
                                             "response.output_text.delta", "response.output_text.done", "response.content_part.done",
                                             "response.output_item.done", "response.completed"}));
}

}  // namespace anthropic_upstream_responses_stream_test

namespace anthropic_upstream_responses_stream_test {

TEST(AnthropicUpstreamResponsesStream, UsageCountsCachedTokensInTheInput) {
  EXPECT_EQ(final_response(case_events("cache_tokens")).at("usage"), json::parse(R"({"input_tokens":6156,
    "input_tokens_details":{"cached_tokens":4096,"cache_write_tokens":2048},"output_tokens":7,
    "output_tokens_details":{"reasoning_tokens":0},"total_tokens":6163})"));  // 12 + 2048 written to the cache + 4096 read from it
  messages_to_responses_stream t({response_id, "m", 1});
  std::string out;
  t.on_event("", R"({"type":"message_start","message":{"usage":{"input_tokens":5,"cache_read_input_tokens":2}}})", out);
  t.on_event("", R"({"type":"message_delta","usage":{"output_tokens":9}})", out);
  EXPECT_EQ(std::pair(t.prompt_tokens(), t.completion_tokens()), std::pair(std::uint64_t{7}, std::uint64_t{9}));  // the gateway's accounting
}

// The error event in http::responses_error_event's shape, sequence_number continuing the stream's.
TEST(AnthropicUpstreamResponsesStream, AnUpstreamErrorIsTheErrorEventWithItsKind) {
  const auto events = case_events("error_mid_stream");
  EXPECT_EQ(events.back().type, "error");
  EXPECT_EQ(json::serialize(events.back().data),
            R"({"type":"error","code":"upstream_overloaded","message":"Overloaded","param":null,"sequence_number":5,)"
            R"("error":{"message":"Overloaded","type":"upstream_error","param":null,"code":"upstream_overloaded"}})");
  auto error_of = [](std::string_view type) {
    messages_to_responses_stream t({response_id, "m", 1});
    std::string out;
    t.on_event("message_start", R"({"type":"message_start","message":{}})", out);
    out.clear();
    EXPECT_FALSE(t.on_event("error", R"({"type":"error","error":{"type":")" + std::string(type) + R"(","message":"M"}})", out));
    EXPECT_TRUE(t.finished());
    EXPECT_EQ(t.next_sequence_number(), 3);
    const auto e = events_of(out).at(0).data.at("error");
    return std::string(e.at("type").as_string()) + "/" + std::string(e.at("code").as_string());
  };
  EXPECT_EQ(error_of("overloaded_error"), "upstream_error/upstream_overloaded");
  EXPECT_EQ(error_of("rate_limit_error"), "rate_limit_error/rate_limit_exceeded");
  EXPECT_EQ(error_of("api_error"), "upstream_error/upstream_error");
  EXPECT_EQ(error_of("invalid_request_error"), "upstream_error/upstream_error");
}

bool ends_in_protocol_error(const std::vector<std::string>& upstream_events) {
  messages_to_responses_stream t({response_id, "m", 1});
  std::string out;
  bool more = true;
  for (const auto& ev : upstream_events) more = t.on_event("", ev, out);
  if (more || !t.finished() || responses_grammar_violation(out) != "") return false;
  return events_of(out).back().data.at("code") == "upstream_protocol_error";
}

TEST(AnthropicUpstreamResponsesStream, ABrokenStreamEndsWithAProtocolError) {
  for (const std::string name : {"ended_before_stop", "not_json"})
    EXPECT_EQ(case_events(name).back().data.at("code"), "upstream_protocol_error") << name;
  const std::string start = R"({"type":"message_start","message":{}})";
  const std::string text0 = R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})";
  const std::string text1 = R"({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}})";
  EXPECT_TRUE(ends_in_protocol_error({text0}));                 // before message_start
  EXPECT_TRUE(ends_in_protocol_error({start, start}));          // a second message_start
  EXPECT_TRUE(ends_in_protocol_error({start, text0, text0}));   // an index reused while open
  EXPECT_TRUE(ends_in_protocol_error({start, text0, text1}));   // two blocks open at once
  EXPECT_TRUE(ends_in_protocol_error({start, text0, R"({"type":"message_stop"})"}));  // a block still open at the end
  EXPECT_TRUE(ends_in_protocol_error({start, R"({"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"x"}})"}));
  EXPECT_TRUE(ends_in_protocol_error({start, R"({"type":"content_block_stop","index":0})"}));
  EXPECT_TRUE(ends_in_protocol_error({start, R"({"type":"content_block_start","index":-1,"content_block":{"type":"text"}})"}));
  EXPECT_TRUE(ends_in_protocol_error({start, "[1,2]"}));
}

TEST(AnthropicUpstreamResponsesStream, OnEndAndFailAddNothingOnceFinished) {
  messages_to_responses_stream t({response_id, "m", 1});
  std::string a;
  for (const char* ev : {R"({"type":"message_start","message":{}})", R"({"type":"message_stop"})"}) EXPECT_TRUE(t.on_event("", ev, a));
  const std::string before = a;
  t.fail("late", a);
  t.on_end(a);
  EXPECT_TRUE(t.on_event("", "not json", a));  // finished cleanly: true, nothing more
  EXPECT_EQ(responses_grammar_violation(a), "");
  EXPECT_EQ(a, before);
  messages_to_responses_stream u({response_id, "m", 1});
  std::string b;
  u.on_end(b);
  u.on_end(b);
  ASSERT_EQ(events_of(b).size(), 1u);  // one error event, however often the end is reported
  EXPECT_EQ(events_of(b)[0].data.at("sequence_number"), 0);
}

TEST(AnthropicUpstreamResponsesStream, WhitespaceInTheUpstreamsJsonChangesNothing) {
  const std::string compact =
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\"}}\n\n"
      "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"x\"}}\n\n"
      "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
      "data: {\"type\":\"message_stop\"}\n\n";
  const std::string spaced =
      "event: message_start\ndata: { \"type\" : \"message_start\" ,\ndata: \"message\" : { \"model\" : \"m\" } }\n\n"  // two data lines
      "data: {\ndata:  \"type\": \"content_block_start\", \"index\" : 0, \"content_block\": {\"type\" :\"text\", \"text\":\"x\"}\t}\n\n"
      "data: { \"type\" : \"content_block_stop\" , \"index\" : 0 }\n\n"
      "data:  {  \"type\"  :  \"message_stop\"  }  \n\n";
  EXPECT_EQ(translate(compact, {}), translate(spaced, {}));
  EXPECT_EQ(responses_grammar_violation(translate(compact, {})), "");
}

std::string sse_of(const json::object& o) { return "data: " + json::serialize(o) + "\n\n"; }
std::string block_start(int index, json::object block) { return sse_of({{"type", "content_block_start"}, {"index", index}, {"content_block", std::move(block)}}); }
std::string block_delta(int index, json::object d) { return sse_of({{"type", "content_block_delta"}, {"index", index}, {"delta", std::move(d)}}); }
std::string block_stop(int index) { return sse_of({{"type", "content_block_stop"}, {"index", index}}); }
const std::string message_start = sse_of({{"type", "message_start"}, {"message", json::object{}}});
const std::string message_stop = sse_of({{"type", "message_stop"}});

// Text the deltas and .done events must carry exactly: every control character, quotes,
// backslashes, a slash, DEL, multi-byte UTF-8.
TEST(AnthropicUpstreamResponsesStream, DeltasAndDoneEventsCarryEveryCharacterExactly) {
  std::string text;
  for (int c = 1; c < 0x20; ++c) text += static_cast<char>(c);
  text += "\"quoted\" back\\slash /slash \x7f \xc3\xa9t\xc3\xa9 \xf0\x9f\x8c\x8a end";
  const std::string upstream = message_start + block_start(0, {{"type", "thinking"}, {"thinking", ""}}) +
                               block_delta(0, {{"type", "thinking_delta"}, {"thinking", text}}) + block_stop(0) +
                               block_start(1, {{"type", "text"}, {"text", ""}}) + block_delta(1, {{"type", "text_delta"}, {"text", text}}) +
                               block_stop(1) + block_start(2, {{"type", "tool_use"}, {"id", "t"}, {"name", "f"}, {"input", json::object{}}}) +
                               block_delta(2, {{"type", "input_json_delta"}, {"partial_json", text}}) + block_stop(2) + message_stop;
  const auto out = translate(upstream, {});
  EXPECT_EQ(responses_grammar_violation(out), "");
  const auto events = events_of(out);
  const auto& output = final_response(events).at("output").as_array();
  ASSERT_EQ(output.size(), 3u);
  EXPECT_EQ(output[0].at("content").at(0).at("text"), json::string_view(text));
  EXPECT_EQ(output[1].at("content").at(0).at("text"), json::string_view(text));
  EXPECT_EQ(output[2].at("arguments"), json::string_view(text));
}

TEST(AnthropicUpstreamResponsesStream, AToolCalledWithoutInputHasEmptyObjectArguments) {
  const std::string upstream = message_start + block_start(0, {{"type", "tool_use"}, {"id", "t"}, {"name", "now"}, {"input", json::object{}}}) +
                               block_delta(0, {{"type", "input_json_delta"}, {"partial_json", ""}}) + block_stop(0) + message_stop;
  const auto out = translate(upstream, {});
  EXPECT_EQ(responses_grammar_violation(out), "");
  EXPECT_EQ(final_response(events_of(out)).at("output").at(0).at("arguments"), "{}");
}

// Each bound ends the stream with the error event instead of keeping without bound.
TEST(AnthropicUpstreamResponsesStream, BlocksOrBytesPastTheirCapEndTheStreamWithAnError) {
  std::string upstream = message_start;
  for (std::size_t i = 0; i <= messages_to_responses_stream::max_blocks; ++i)
    upstream += block_start(static_cast<int>(i), {{"type", "redacted_thinking"}, {"data", "x"}}) + block_stop(static_cast<int>(i));
  auto out = translate(upstream, {});
  EXPECT_EQ(responses_grammar_violation(out), "");
  EXPECT_EQ(events_of(out).back().type, "error");
  upstream = message_start + block_start(0, {{"type", "text"}, {"text", ""}});
  const std::string piece(60 * 1024, 'a');
  for (std::size_t sent = 0; sent <= messages_to_responses_stream::max_output_bytes; sent += piece.size())
    upstream += block_delta(0, {{"type", "text_delta"}, {"text", piece}});
  out = translate(upstream, {});
  EXPECT_EQ(responses_grammar_violation(out), "");
  const auto events = events_of(out);
  EXPECT_EQ(events.back().type, "error");
  EXPECT_EQ(events.size(), 4 + messages_to_responses_stream::max_output_bytes / piece.size() + 1);  // created, in_progress, added, part, the deltas that fit, the error
}

}  // namespace anthropic_upstream_responses_stream_test
