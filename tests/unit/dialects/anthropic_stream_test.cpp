// The chat-completions → Messages stream translation against its corpus
// (tests/data/dialects/anthropic: each case's upstream stream and its expected translation), fed
// whole, split at every byte offset, and byte by byte; and the Messages API's ordering rules checked
// on every case's output, so a wrong golden file cannot hide a framing bug.
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "dialects/anthropic_stream.hpp"
#include "dialect_test_files.hpp"
#include "sse/parser.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using sluice::dialects::chat_to_messages_stream;

const fs::path corpus_dir = fs::path(SLUICE_TEST_DATA_DIR) / "dialects" / "anthropic";

// The upstream's bytes fed in the given pieces through the relay's SSE parser into a translator.
std::string translate(std::string_view upstream, const std::vector<std::size_t>& cuts) {
  sluice::sse::parser parser;
  chat_to_messages_stream t({"msg_0123456789abcdef0123456789abcdef", "fallback-model", 11});
  std::string out;
  std::size_t from = 0;
  auto feed = [&](std::string_view piece) {
    auto r = parser.feed(piece, [&](const sluice::sse::event_view& ev) { return t.on_event(ev.data, out); });
    EXPECT_TRUE(static_cast<bool>(r));
  };
  for (auto cut : cuts) {
    if (t.finished()) break;
    feed(upstream.substr(from, cut - from));
    from = cut;
  }
  if (!t.finished()) feed(upstream.substr(from));
  t.on_end(out);
  return out;
}

struct event {
  std::string type;
  json::object data;
};

std::vector<event> events_of(std::string_view translated) {
  std::vector<event> out;
  sluice::sse::parser parser;
  auto r = parser.feed(translated, [&](const sluice::sse::event_view& ev) {
    out.push_back({std::string(ev.type), json::parse(ev.data).as_object()});
  });
  EXPECT_TRUE(static_cast<bool>(r));
  return out;
}

// The Messages API's stream grammar: message_start (first), then blocks that start, take deltas of
// their own kind and stop one at a time with indices 0, 1, 2...; then message_delta and message_stop
// (last); or an `error` event that ends the stream. Each event's `type` names its SSE event.
void expect_messages_grammar(const std::vector<event>& evs, const std::string& name) {
  SCOPED_TRACE(name);
  ASSERT_FALSE(evs.empty());
  int open = -1, next = 0;
  bool started = false, delta_seen = false;
  std::string open_type;
  for (std::size_t i = 0; i < evs.size(); ++i) {
    const auto& e = evs[i];
    EXPECT_EQ(e.data.at("type").as_string(), e.type);
    if (e.type == "error") {
      EXPECT_EQ(i + 1, evs.size()) << "an error ends the stream";
      return;
    }
    if (e.type == "message_start") {
      EXPECT_EQ(i, 0u);
      started = true;
      continue;
    }
    ASSERT_TRUE(started) << e.type << " before message_start";
    if (e.type == "content_block_start") {
      EXPECT_EQ(open, -1) << "a block starts while another is open";
      EXPECT_EQ(e.data.at("index").as_int64(), next);
      open = next;
      open_type = std::string(e.data.at("content_block").at("type").as_string());
    } else if (e.type == "content_block_delta") {
      EXPECT_EQ(e.data.at("index").as_int64(), open);
      const auto dtype = std::string(e.data.at("delta").at("type").as_string());
      const std::map<std::string, std::string> kind_of{{"text_delta", "text"}, {"thinking_delta", "thinking"}, {"input_json_delta", "tool_use"}};
      EXPECT_EQ(kind_of.at(dtype), open_type);
    } else if (e.type == "content_block_stop") {
      EXPECT_EQ(e.data.at("index").as_int64(), open);
      open = -1;
      ++next;
    } else if (e.type == "message_delta") {
      EXPECT_EQ(open, -1) << "message_delta while a block is open";
      delta_seen = true;
    } else if (e.type == "message_stop") {
      EXPECT_TRUE(delta_seen);
      EXPECT_EQ(i + 1, evs.size());
    } else {
      EXPECT_EQ(e.type, "ping");
    }
  }
  EXPECT_EQ(evs.back().type, "message_stop") << "the stream ended without message_stop or error";
}

TEST(AnthropicStream, EveryCaseMatchesItsExpectedTranslation) {
  const auto cases = sluice::dialects::testing::corpus_cases(corpus_dir);
  ASSERT_GE(cases.size(), 10u);
  const bool regenerate = std::getenv("SLUICE_REGENERATE_CORPUS") != nullptr;
  for (const auto& name : cases) {
    const auto upstream = sluice::dialects::testing::read_text(corpus_dir / (name + ".upstream.sse"));
    const auto got = translate(upstream, {});
    const auto expected_path = corpus_dir / (name + ".expected.sse");
    if (regenerate) std::ofstream(expected_path, std::ios::binary) << got;
    EXPECT_EQ(got, sluice::dialects::testing::read_text(expected_path)) << name;
    expect_messages_grammar(events_of(got), name);
  }
}

TEST(AnthropicStream, ATranslationDoesNotDependOnWhereTheUpstreamsBytesAreSplit) {
  for (const auto& name : sluice::dialects::testing::corpus_cases(corpus_dir)) {
    const auto upstream = sluice::dialects::testing::read_text(corpus_dir / (name + ".upstream.sse"));
    const auto whole = translate(upstream, {});
    for (std::size_t cut = 1; cut < upstream.size(); ++cut)
      ASSERT_EQ(translate(upstream, {cut}), whole) << name << " split at " << cut;
    std::vector<std::size_t> every;
    for (std::size_t cut = 1; cut < upstream.size(); ++cut) every.push_back(cut);
    EXPECT_EQ(translate(upstream, every), whole) << name << " fed byte by byte";
  }
}

std::string stop_reason_of(const std::vector<event>& evs) {
  for (const auto& e : evs)
    if (e.type == "message_delta") return std::string(e.data.at("delta").at("stop_reason").as_string());
  return "(none)";
}

std::string case_output(const std::string& name) {
  return translate(sluice::dialects::testing::read_text(corpus_dir / (name + ".upstream.sse")), {});
}

TEST(AnthropicStream, EachFinishReasonHasItsStopReason) {
  EXPECT_EQ(stop_reason_of(events_of(case_output("text_then_usage"))), "end_turn");
  EXPECT_EQ(stop_reason_of(events_of(case_output("tool_first"))), "tool_use");
  EXPECT_EQ(stop_reason_of(events_of(case_output("parallel_tools"))), "tool_use");
  EXPECT_EQ(stop_reason_of(events_of(case_output("max_tokens"))), "max_tokens");
  EXPECT_EQ(stop_reason_of(events_of(case_output("content_filter"))), "refusal");
  const auto seq = events_of(case_output("stop_sequence"));
  EXPECT_EQ(stop_reason_of(seq), "stop_sequence");
  EXPECT_EQ(seq[seq.size() - 2].data.at("delta").at("stop_sequence").as_string(), "three");
}

TEST(AnthropicStream, ToolArgumentsArriveWholeInTheirOwnBlocks) {
  for (const std::string name : {"tool_first", "parallel_tools", "text_and_tool_in_one_chunk"}) {
    SCOPED_TRACE(name);
    std::map<std::int64_t, std::string> args;
    std::vector<std::string> names;
    for (const auto& e : events_of(case_output(name))) {
      if (e.type == "content_block_start" && e.data.at("content_block").at("type") == "tool_use") {
        names.emplace_back(e.data.at("content_block").at("name").as_string());
      }
      if (e.type == "content_block_delta" && e.data.at("delta").at("type") == "input_json_delta") {
        args[e.data.at("index").as_int64()] += e.data.at("delta").at("partial_json").as_string();
      }
    }
    ASSERT_FALSE(args.empty());
    for (const auto& [index, text] : args) {
      EXPECT_TRUE(json::parse(text).is_object()) << text;
    }
    EXPECT_FALSE(names.front().empty());
    if (name == "parallel_tools") {
      EXPECT_EQ(names, (std::vector<std::string>{"get_weather", "get_time"}));
    }
  }
}

TEST(AnthropicStream, MessageStartCarriesTheGatewaysIdAndPromptEstimateNotZeros) {
  const auto evs = events_of(case_output("tool_first"));
  const auto& message = evs.front().data.at("message");
  EXPECT_EQ(message.at("id"), "msg_0123456789abcdef0123456789abcdef");  // not the upstream's chatcmpl-7
  EXPECT_EQ(message.at("usage").at("input_tokens").as_int64(), 11);
  EXPECT_EQ(message.at("model"), "sim-1");  // the upstream's chunk names it
}

TEST(AnthropicStream, UsageComesFromTheChunkAfterTheFinish) {
  const auto evs = events_of(case_output("thinking"));
  const auto& usage = evs[evs.size() - 2].data.at("usage");
  EXPECT_EQ(usage.at("input_tokens").as_int64(), 8);  // 40 prompt tokens, 32 of them read from the cache
  EXPECT_EQ(usage.at("output_tokens").as_int64(), 9);
  EXPECT_EQ(usage.at("cache_read_input_tokens").as_int64(), 32);
}

TEST(AnthropicStream, AnUpstreamErrorOrAnEarlyEndIsAnErrorEvent) {
  for (const std::string name : {"error_mid_stream", "ended_before_finish", "interleaved_tool_arguments"}) {
    const auto evs = events_of(case_output(name));
    ASSERT_FALSE(evs.empty());
    EXPECT_EQ(evs.back().type, "error") << name;
  }
  EXPECT_EQ(events_of(case_output("error_mid_stream")).back().data.at("error").at("message"), "upstream overloaded");
}

TEST(AnthropicStream, WhitespaceInTheUpstreamsJsonChangesNothing) {
  const std::string compact = R"({"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]})";
  const std::string spaced = "{ \"id\" : \"c1\" ,\n \"model\": \"m\", \"choices\" : [ { \"index\" : 0 , \"delta\" : { \"content\" : \"x\" }, \"finish_reason\" : \"stop\" } ] }";
  std::string a, b;
  chat_to_messages_stream ta, tb;
  ta.on_event(compact, a);
  ta.on_end(a);
  tb.on_event(spaced, b);
  tb.on_end(b);
  EXPECT_EQ(a, b);
}

}  // namespace

namespace {

// Text the deltas must carry exactly: every control character, quotes, backslashes, a slash,
// DEL, multi-byte UTF-8 (the deltas are written without a JSON serializer, docs/dialects.md).
TEST(AnthropicStream, DeltasCarryEveryCharacterExactly) {
  std::string text;
  for (int c = 1; c < 0x20; ++c) text += static_cast<char>(c);
  text += "\"quoted\" back\\slash /slash \x7f \xc3\xa9t\xc3\xa9 \xf0\x9f\x8c\x8a end";
  const auto chunk = [](const json::object& delta) {
    return "data: " + json::serialize(json::object{{"choices", json::array{json::object{{"index", 0}, {"delta", delta}}}}}) + "\n\n";
  };
  const std::string upstream =
      chunk({{"reasoning_content", text}}) + chunk({{"content", text}}) +
      chunk({{"tool_calls", json::array{json::object{{"index", 0}, {"id", "c1"}, {"function", json::object{{"name", "f"}, {"arguments", text}}}}}}}) +
      "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n";
  std::vector<std::string> carried;
  for (const auto& e : events_of(translate(upstream, {}))) {
    if (e.type != "content_block_delta") continue;
    const auto& d = e.data.at("delta").as_object();
    for (const char* field : {"thinking", "text", "partial_json"})
      if (const auto* v = d.if_contains(field)) carried.emplace_back(v->as_string());
  }
  EXPECT_EQ(carried, (std::vector<std::string>{text, text, text}));
}

}  // namespace

namespace {

// The translator remembers each tool call's index; past max_tool_calls the stream ends with an
// error event instead of remembering without bound.
TEST(AnthropicStream, ToolCallsPastTheCapEndTheStreamWithAnError) {
  std::string upstream;
  for (std::size_t i = 0; i <= chat_to_messages_stream::max_tool_calls; ++i)
    upstream += R"(data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":)" + std::to_string(i) +
                R"(,"id":"c","function":{"name":"f","arguments":"{}"}}]}}]})" + "\n\n";
  const auto evs = events_of(translate(upstream, {}));
  expect_messages_grammar(evs, "over the cap");
  ASSERT_EQ(evs.back().type, "error");
  std::size_t tool_blocks = 0;
  for (const auto& e : evs) tool_blocks += e.type == "content_block_start";
  EXPECT_EQ(tool_blocks, chat_to_messages_stream::max_tool_calls);
}

}  // namespace
