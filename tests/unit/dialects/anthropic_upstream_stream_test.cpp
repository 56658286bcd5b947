// The Messages → chat-completions stream translation (an Anthropic upstream behind
// /v1/chat/completions) against its corpus (tests/data/dialects/anthropic_upstream: each case's
// upstream Messages stream and its expected chat chunks), fed whole, split at every byte offset,
// and byte by byte; and the chat stream's grammar checked on every case's output, so a wrong
// golden file cannot hide a framing bug. A case asks for the usage chunk
// (stream_options.include_usage) unless its name ends in _no_usage.
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "dialects/anthropic_upstream_stream.hpp"
#include "anthropic_upstream_responses_grammar.hpp"
#include "dialect_test_files.hpp"
#include "sse/parser.hpp"

namespace anthropic_upstream_stream_test {

namespace fs = std::filesystem;
namespace json = boost::json;
using sluice::dialects::chunk_start_info;
using sluice::dialects::messages_to_chat_stream;

const fs::path corpus_dir = fs::path(SLUICE_TEST_DATA_DIR) / "dialects" / "anthropic_upstream";
const std::string chunk_id = "chatcmpl-0123456789abcdef0123456789abcdef";

bool wants_usage(const std::string& name) { return !name.ends_with("_no_usage"); }

// The upstream's bytes fed in the given pieces through the relay's SSE parser into a translator.
std::string translate(std::string_view upstream, const std::vector<std::size_t>& cuts, bool include_usage = true) {
  sluice::sse::parser parser;
  messages_to_chat_stream t(chunk_start_info{chunk_id, "asked-model", 1700000000, include_usage});
  return sluice::dialects::testing::translate_in_pieces(t, parser, upstream, cuts);
}

// Each event's data: a JSON object, or "[DONE]" (a null value here).
std::vector<json::value> datas_of(std::string_view translated) {
  std::vector<json::value> out;
  sluice::sse::parser parser;
  auto r = parser.feed(translated, [&](const sluice::sse::event_view& ev) {
    EXPECT_TRUE(ev.type.empty()) << "a chat stream names no event types";
    out.push_back(ev.data == "[DONE]" ? json::value(nullptr) : json::parse(ev.data));
  });
  EXPECT_TRUE(static_cast<bool>(r));
  return out;
}

// A chunk's tool_calls (a delta's): a new call takes the next index (0, 1, 2...) and names its id,
// type and function; a later piece of it names neither id nor type.
void expect_tool_calls(const json::object& delta, std::size_t& calls) {
  const auto* tool_calls = delta.if_contains("tool_calls");
  if (!tool_calls) return;
  for (const auto& c : tool_calls->as_array()) {
    const auto index = static_cast<std::size_t>(c.at("index").as_int64());
    ASSERT_LE(index, calls) << "tool call indices go 0, 1, 2... in order";
    if (index == calls) {
      ++calls;
      EXPECT_FALSE(c.at("id").as_string().empty());
      EXPECT_EQ(c.at("type"), "function");
      EXPECT_FALSE(c.at("function").at("name").as_string().empty());
    } else {
      EXPECT_FALSE(c.as_object().contains("id"));
    }
    EXPECT_TRUE(c.at("function").at("arguments").is_string());
  }
}

// The chat stream's grammar: chunks with one id, created and model; the first delta names the
// assistant's role; exactly one finish_reason; after it only the usage chunk (when asked for) and
// [DONE], last. Or an error event, last, with no [DONE].
void expect_chat_grammar(const std::vector<json::value>& datas, bool include_usage, const std::string& name) {
  SCOPED_TRACE(name);
  ASSERT_FALSE(datas.empty());
  std::size_t finishes = 0, usages = 0, calls = 0;
  for (std::size_t i = 0; i < datas.size(); ++i) {
    const bool last = i + 1 == datas.size();
    if (datas[i].is_null()) {
      EXPECT_TRUE(last) << "[DONE] is last";
      EXPECT_EQ(finishes, 1u);
      EXPECT_EQ(usages, include_usage ? 1u : 0u);
      return;
    }
    const auto& o = datas[i].as_object();
    if (o.contains("error")) {
      EXPECT_TRUE(last) << "an error ends the stream";
      for (const char* field : {"message", "type", "param", "code"}) EXPECT_TRUE(o.at("error").as_object().contains(field)) << field;
      return;
    }
    EXPECT_EQ(o.at("id"), json::value(chunk_id));
    EXPECT_EQ(o.at("object"), "chat.completion.chunk");
    EXPECT_EQ(o.at("created"), 1700000000);
    EXPECT_EQ(o.at("model"), datas[0].at("model"));
    const auto& choices = o.at("choices").as_array();
    if (choices.empty()) {
      EXPECT_EQ(finishes, 1u) << "the usage chunk follows the finish";
      EXPECT_TRUE(o.at("usage").is_object());
      ++usages;
      continue;
    }
    ASSERT_EQ(choices.size(), 1u);
    EXPECT_EQ(finishes, 0u) << "nothing but usage and [DONE] after the finish";
    const auto& choice = choices[0].as_object();
    EXPECT_EQ(choice.at("index"), 0);
    if (i == 0) {
      EXPECT_EQ(choice.at("delta").at("role"), "assistant");
    }
    expect_tool_calls(choice.at("delta").as_object(), calls);
    if (!choice.at("finish_reason").is_null()) ++finishes;
  }
  ADD_FAILURE() << "the stream ended without [DONE] or an error";
}

TEST(AnthropicUpstreamStream, EveryCaseMatchesItsExpectedTranslation) {
  const auto cases = sluice::dialects::testing::corpus_cases(corpus_dir);
  ASSERT_GE(cases.size(), 15u);
  const bool regenerate = std::getenv("SLUICE_REGENERATE_CORPUS") != nullptr;
  for (const auto& name : cases) {
    const auto upstream = sluice::dialects::testing::read_text(corpus_dir / (name + ".upstream.sse"));
    const auto got = translate(upstream, {}, wants_usage(name));
    const auto expected_path = corpus_dir / (name + ".expected.sse");
    if (regenerate) std::ofstream(expected_path, std::ios::binary) << got;
    EXPECT_EQ(got, sluice::dialects::testing::read_text(expected_path)) << name;
    expect_chat_grammar(datas_of(got), wants_usage(name), name);
  }
}

TEST(AnthropicUpstreamStream, ATranslationDoesNotDependOnWhereTheUpstreamsBytesAreSplit) {
  for (const auto& name : sluice::dialects::testing::corpus_cases(corpus_dir)) {
    const auto upstream = sluice::dialects::testing::read_text(corpus_dir / (name + ".upstream.sse"));
    const auto whole = translate(upstream, {}, wants_usage(name));
    for (std::size_t cut = 1; cut < upstream.size(); ++cut)
      ASSERT_EQ(translate(upstream, {cut}, wants_usage(name)), whole) << name << " split at " << cut;
    std::vector<std::size_t> every;
    for (std::size_t cut = 1; cut < upstream.size(); ++cut) every.push_back(cut);
    EXPECT_EQ(translate(upstream, every, wants_usage(name)), whole) << name << " fed byte by byte";
  }
}

std::vector<json::value> case_datas(const std::string& name) {
  return datas_of(translate(sluice::dialects::testing::read_text(corpus_dir / (name + ".upstream.sse")), {}, wants_usage(name)));
}

std::string finish_reason_of(const std::vector<json::value>& datas) {
  for (const auto& d : datas)
    if (d.is_object() && !d.at("choices").as_array().empty() && !d.at("choices").at(0).at("finish_reason").is_null())
      return std::string(d.at("choices").at(0).at("finish_reason").as_string());
  return "(none)";
}

TEST(AnthropicUpstreamStream, EachStopReasonHasItsFinishReason) {
  EXPECT_EQ(finish_reason_of(case_datas("text_with_usage")), "stop");
  EXPECT_EQ(finish_reason_of(case_datas("stop_sequence")), "stop");
  EXPECT_EQ(finish_reason_of(case_datas("max_tokens")), "length");
  EXPECT_EQ(finish_reason_of(case_datas("tool_first")), "tool_calls");
  EXPECT_EQ(finish_reason_of(case_datas("parallel_tools")), "tool_calls");
  EXPECT_EQ(finish_reason_of(case_datas("refusal")), "content_filter");
}

TEST(AnthropicUpstreamStream, ToolArgumentsArriveWholeUnderTheirOwnIndex) {
  for (const std::string name : {"tool_first", "parallel_tools", "text_then_tool", "tool_input_at_start"}) {
    SCOPED_TRACE(name);
    std::vector<std::string> args, names;
    for (const auto& d : case_datas(name)) {
      if (!d.is_object() || d.at("choices").as_array().empty()) continue;
      const auto* calls = d.at("choices").at(0).at("delta").as_object().if_contains("tool_calls");
      for (std::size_t k = 0; calls && k < calls->as_array().size(); ++k) {
        const auto& c = calls->as_array()[k];
        const auto index = static_cast<std::size_t>(c.at("index").as_int64());
        if (index == args.size()) {
          args.emplace_back();
          names.emplace_back(c.at("function").at("name").as_string());
        }
        args[index] += c.at("function").at("arguments").as_string();
      }
    }
    ASSERT_FALSE(args.empty());
    for (const auto& text : args) EXPECT_TRUE(json::parse(text).is_object()) << text;
    if (name == "parallel_tools") {
      EXPECT_EQ(names, (std::vector<std::string>{"get_weather", "get_time"}));
      EXPECT_EQ(json::parse(args[1]), json::parse(R"({"zone":"CET"})"));
    }
    if (name == "tool_input_at_start") {
      EXPECT_EQ(json::parse(args[0]), json::parse(R"({"id":42,"deep":true})"));
    }
  }
}

}  // namespace anthropic_upstream_stream_test

namespace anthropic_upstream_stream_test {

TEST(AnthropicUpstreamStream, UsageCountsCachedTokensInThePrompt) {
  const auto datas = case_datas("cache_tokens");
  const auto& usage = datas[datas.size() - 2].at("usage");
  EXPECT_EQ(usage, json::parse(R"({"prompt_tokens":6156,"completion_tokens":7,"total_tokens":6163,
    "prompt_tokens_details":{"cached_tokens":4096}})"));  // 12 + 2048 written to the cache + 4096 read from it
  messages_to_chat_stream t({chunk_id, "m", 1, true});
  std::string out;
  for (const auto& ev : {R"({"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1}}})",
                         R"({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9,"input_tokens":null}})"})
    t.on_event("", ev, out);
  EXPECT_EQ(t.prompt_tokens(), 5u);  // a null count leaves the count as it was
  EXPECT_EQ(t.completion_tokens(), 9u);
}

TEST(AnthropicUpstreamStream, WithoutIncludeUsageThereIsNoUsageChunk) {
  for (const auto& d : case_datas("text_no_usage")) EXPECT_FALSE(d.is_object() && d.as_object().contains("usage"));
  const auto with = case_datas("text_with_usage");
  EXPECT_TRUE(with[with.size() - 2].as_object().contains("usage"));
}

TEST(AnthropicUpstreamStream, ChunksCarryTheGatewaysIdAndTheUpstreamsModelElseTheAskedOne) {
  const auto datas = case_datas("thinking_with_signature");
  EXPECT_EQ(datas.front().at("id"), json::value(chunk_id));  // not the upstream's msg_ id
  EXPECT_EQ(datas.front().at("model"), "claude-opus-4-5");
  messages_to_chat_stream t({chunk_id, "asked-model", 7, false});
  std::string out;
  t.on_event("message_start", R"({"type":"message_start","message":{"usage":{}}})", out);
  EXPECT_EQ(json::parse(out.substr(6)).at("model"), "asked-model");
  EXPECT_EQ(json::parse(out.substr(6)).at("created"), 7);
}

TEST(AnthropicUpstreamStream, ThinkingIsReasoningContentAndSignaturesAreDropped) {
  std::string reasoning, content;
  for (const auto& d : case_datas("thinking_with_signature")) {
    if (!d.is_object() || d.at("choices").as_array().empty()) continue;
    const auto& delta = d.at("choices").at(0).at("delta").as_object();
    if (const auto* r = delta.if_contains("reasoning_content")) reasoning += r->as_string();
    if (const auto* c = delta.if_contains("content")) content += c->as_string();
    EXPECT_EQ(json::serialize(delta).find("signature"), std::string::npos);
  }
  EXPECT_EQ(reasoning, "Let me solve this step by step:\n\n1. First break down 27 * 453\n2. 453 = 400 + 50 + 3");
  EXPECT_EQ(content, "27 * 453 = 12,231");
}

TEST(AnthropicUpstreamStream, AnUpstreamErrorIsAnInBandErrorWithItsKind) {
  const auto datas = case_datas("error_mid_stream");
  EXPECT_EQ(datas.back(), json::parse(R"({"error":{"message":"Overloaded","type":"upstream_error","param":null,"code":"upstream_overloaded"}})"));
  auto error_of = [](std::string_view type) {
    messages_to_chat_stream t({chunk_id, "m", 1, true});
    std::string out;
    t.on_event("message_start", R"({"type":"message_start","message":{}})", out);
    out.clear();
    const bool more = t.on_event("error", R"({"type":"error","error":{"type":")" + std::string(type) + R"(","message":"M"}})", out);
    EXPECT_FALSE(more);
    EXPECT_TRUE(t.finished());
    const auto e = json::parse(out.substr(6)).at("error");
    return std::string(e.at("type").as_string()) + "/" + std::string(e.at("code").as_string());
  };
  EXPECT_EQ(error_of("overloaded_error"), "upstream_error/upstream_overloaded");
  EXPECT_EQ(error_of("rate_limit_error"), "rate_limit_error/rate_limit_exceeded");
  EXPECT_EQ(error_of("api_error"), "upstream_error/upstream_error");
  EXPECT_EQ(error_of("invalid_request_error"), "upstream_error/upstream_error");
}

TEST(AnthropicUpstreamStream, ABrokenStreamEndsWithAProtocolError) {
  for (const std::string name : {"ended_before_stop", "not_json"}) {
    const auto datas = case_datas(name);
    EXPECT_EQ(datas.back().at("error").at("code"), "upstream_protocol_error") << name;
  }
  const std::string start = R"({"type":"message_start","message":{}})";
  const std::string text_block = R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})";
  auto ends_in_error = [&](std::vector<std::string> events) {
    messages_to_chat_stream t({chunk_id, "m", 1, true});
    std::string out;
    bool more = true;
    for (const auto& ev : events) more = t.on_event("", ev, out);
    const auto last = out.rfind("data: ");
    return !more && t.finished() && json::parse(out.substr(last + 6)).at("error").at("code") == "upstream_protocol_error";
  };
  EXPECT_TRUE(ends_in_error({text_block}));                                                                  // before message_start
  EXPECT_TRUE(ends_in_error({start, start}));                                                                // a second message_start
  EXPECT_TRUE(ends_in_error({start, text_block, text_block}));                                               // an index reused while open
  EXPECT_TRUE(ends_in_error({start, R"({"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"x"}})"}));
  EXPECT_TRUE(ends_in_error({start, R"({"type":"content_block_stop","index":0})"}));                         // a block never opened
  EXPECT_TRUE(ends_in_error({start, R"({"type":"content_block_start","index":-1,"content_block":{"type":"text"}})"}));
  EXPECT_TRUE(ends_in_error({start, "[1,2]"}));                                                              // JSON, not an object
}

TEST(AnthropicUpstreamStream, OnEndAndFailAddNothingOnceFinished) {
  std::string out = translate(sluice::dialects::testing::read_text(corpus_dir / "text_with_usage.upstream.sse"), {});
  ASSERT_TRUE(out.ends_with("data: [DONE]\n\n"));
  messages_to_chat_stream t({chunk_id, "m", 1, false});
  std::string a;
  t.on_event("", R"({"type":"message_start","message":{}})", a);
  t.on_event("", R"({"type":"message_stop"})", a);
  const auto before = a;
  t.on_end(a);
  t.fail("late", a);
  t.on_end(a);
  EXPECT_TRUE(t.on_event("", R"({"type":"message_stop"})", a));  // finished cleanly: true, nothing more
  EXPECT_EQ(a, before);
  messages_to_chat_stream u({chunk_id, "m", 1, false});
  std::string b;
  u.on_end(b);
  u.on_end(b);
  EXPECT_EQ(datas_of(b).size(), 1u);  // one error event, however often the end is reported
}

TEST(AnthropicUpstreamStream, WhitespaceInTheUpstreamsJsonChangesNothing) {
  const std::string compact =
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\"}}\n\n"
      "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"x\"}}\n\n"
      "data: {\"type\":\"message_stop\"}\n\n";
  const std::string spaced =
      "event: message_start\ndata: { \"type\" : \"message_start\" ,\ndata: \"message\" : { \"model\" : \"m\" } }\n\n"  // two data lines
      "data: {\ndata:  \"type\": \"content_block_start\", \"index\" : 0, \"content_block\": {\"type\" :\"text\", \"text\":\"x\"}\t}\n\n"
      "data:  {  \"type\"  :  \"message_stop\"  }  \n\n";
  EXPECT_EQ(translate(compact, {}), translate(spaced, {}));
}

// Text the deltas must carry exactly: every control character, quotes, backslashes, a slash, DEL,
// multi-byte UTF-8.
TEST(AnthropicUpstreamStream, DeltasCarryEveryCharacterExactly) {
  std::string text;
  for (int c = 1; c < 0x20; ++c) text += static_cast<char>(c);
  text += "\"quoted\" back\\slash /slash \x7f \xc3\xa9t\xc3\xa9 \xf0\x9f\x8c\x8a end";
  auto event = [](const json::object& o) { return "data: " + json::serialize(o) + "\n\n"; };
  auto delta = [&](int index, json::object d) { return event({{"type", "content_block_delta"}, {"index", index}, {"delta", std::move(d)}}); };
  const std::string upstream =
      event({{"type", "message_start"}, {"message", json::object{}}}) +
      event({{"type", "content_block_start"}, {"index", 0}, {"content_block", {{"type", "thinking"}, {"thinking", ""}}}}) +
      delta(0, {{"type", "thinking_delta"}, {"thinking", text}}) +
      event({{"type", "content_block_start"}, {"index", 1}, {"content_block", {{"type", "text"}, {"text", ""}}}}) +
      delta(1, {{"type", "text_delta"}, {"text", text}}) +
      event({{"type", "content_block_start"}, {"index", 2}, {"content_block", {{"type", "tool_use"}, {"id", "t"}, {"name", "f"}, {"input", json::object{}}}}}) +
      delta(2, {{"type", "input_json_delta"}, {"partial_json", text}}) + event({{"type", "message_stop"}});
  std::vector<std::string> carried;
  for (const auto& d : datas_of(translate(upstream, {}))) {
    if (!d.is_object() || d.at("choices").as_array().empty()) continue;
    const auto& o = d.at("choices").at(0).at("delta").as_object();
    if (const auto* v = o.if_contains("reasoning_content")) carried.emplace_back(v->as_string());
    if (const auto* v = o.if_contains("content"); v && !v->as_string().empty()) carried.emplace_back(v->as_string());
    if (const auto* v = o.if_contains("tool_calls"); v && !v->at(0).as_object().contains("id"))
      carried.emplace_back(v->at(0).at("function").at("arguments").as_string());
  }
  EXPECT_EQ(carried, (std::vector<std::string>{text, text, text}));
}

// The translator remembers each open block; past max_blocks the stream ends with an error event
// instead of remembering without bound.
TEST(AnthropicUpstreamStream, BlocksPastTheCapEndTheStreamWithAnError) {
  std::string upstream = "data: {\"type\":\"message_start\",\"message\":{}}\n\n";
  for (std::size_t i = 0; i <= messages_to_chat_stream::max_blocks; ++i)
    upstream += R"(data: {"type":"content_block_start","index":)" + std::to_string(i) +
                R"(,"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}})" + "\n\n";
  const auto datas = datas_of(translate(upstream, {}));
  expect_chat_grammar(datas, true, "over the cap");
  ASSERT_TRUE(datas.back().as_object().contains("error"));
  EXPECT_EQ(datas.size(), 1 + messages_to_chat_stream::max_blocks + 1);  // the role chunk, the tool calls, the error
}

}  // namespace anthropic_upstream_stream_test
