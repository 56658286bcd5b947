// scan_event against a DOM-built oracle: every field must agree on every sample, and malformed
// payloads must be refused exactly where boost::json::parse refuses them (or the top level is not
// an object). Its skim against its SAX scan: wherever the skim is sure, the same facts.
#include "proxy/relay/event_scan.hpp"
#include "event_scan_oracle.hpp"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <string>
#include <vector>

namespace sluice::proxy {
namespace {

namespace json = boost::json;

void expect_same_facts(const event_facts& got, const event_facts& want) {
  EXPECT_EQ(got.choices_array, want.choices_array);
  EXPECT_EQ(got.choices, want.choices);
  EXPECT_EQ(got.usage_object, want.usage_object);
  EXPECT_EQ(got.has_error, want.has_error);
  EXPECT_EQ(got.completion_tokens, want.completion_tokens);
  EXPECT_EQ(got.prompt_tokens, want.prompt_tokens);
  EXPECT_EQ(got.output_tokens, want.output_tokens);
  EXPECT_EQ(got.input_tokens, want.input_tokens);
  EXPECT_EQ(got.sequence_number, want.sequence_number);
  EXPECT_EQ(got.type, want.type);
  EXPECT_EQ(got.response_object, want.response_object);
}

// And the response id's place, which a DOM cannot show.
void expect_same_facts_and_id(const event_facts& got, const event_facts& want) {
  expect_same_facts(got, want);
  EXPECT_EQ(got.response_id.found, want.response_id.found);
  EXPECT_EQ(got.response_id.at, want.response_id.at);
  EXPECT_EQ(got.response_id.size, want.response_id.size);
}

// The skim, where it is sure, against the SAX scan (every fact, the response id's place too).
// Returns whether it was sure.
bool skim_agrees(std::string_view text) {
  event_facts skimmed, scanned;
  if (detail::skim_event(text, skimmed) != detail::skim_verdict::object) return false;
  EXPECT_TRUE(detail::scan_event_sax(text, scanned)) << "the skim accepted what the SAX scan refuses";
  expect_same_facts_and_id(skimmed, scanned);
  return true;
}

void expect_same(std::string_view text) {
  SCOPED_TRACE(std::string(text));
  skim_agrees(text);
  event_facts got, want;
  const bool ok = scan_event(text, got);
  const bool want_ok = event_scan_oracle(text, want);
  ASSERT_EQ(ok, want_ok);
  if (!ok) return;
  expect_same_facts(got, want);
}

const std::vector<std::string> samples = {
    // chat chunks
    R"({"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]})",
    R"({"id":"c1","choices":[{"index":0,"delta":{"role":"assistant"}},{"index":1,"delta":{}},{"index":2,"delta":{"content":"x"}}]})",
    R"({"id":"c1","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":34,"total_tokens":46}})",
    R"({"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":7},"completion_tokens_details":{"reasoning_tokens":3}}})",
    R"({"choices":[{"logprobs":{"content":[{"token":"a","logprob":-1,"top_logprobs":[]}]},"delta":{"content":"a"}}],"usage":null})",
    R"({"choices":[[1,2],[3],4,"five",null,true,{"a":[{"b":[]}]}]})",
    R"({"choices":{"not":"an array"}})",
    R"({"choices":"text"})",
    R"({"choices":[{"usage":{"completion_tokens":99}}],"type":"x"})",
    R"({"usage":{"completion_tokens":18446744073709551615,"prompt_tokens":-3,"input_tokens":1.5,"output_tokens":"9"}})",
    R"({"usage":[1,2],"choices":[]})",
    R"({"usage":{"input_tokens":5,"output_tokens":6}})",
    // errors
    R"({"error":{"message":"boom","type":"server_error","param":null,"code":null}})",
    R"({"error":null})",
    R"({"error":"text"})",
    R"({"data":{"error":{"message":"nested"}}})",
    // Responses API
    R"({"type":"response.output_text.delta","delta":"hi"})",
    R"({"type":"response.completed","response":{"id":"r","status":"completed","usage":{"input_tokens":3,"output_tokens":4}}})",
    R"({"type":"response.incomplete"})",
    R"({"type":"response.failed","response":{"type":"response.completed"}})",
    R"({"type":"error","code":"x"})",
    R"({"type":7})",
    R"({"type":"response.completed.extra.long.string.beyond.the.name.buffer"})",
    R"({"type":"response.refusal.delta","sequence_number":4,"delta":"no"})",
    R"({"type":"response.function_call_arguments.delta","sequence_number":18446744073709551615,"delta":"{"})",
    R"({"sequence_number":-2,"type":"response.output_text.delta.more"})",
    R"({"sequence_number":"7","type":"response.output_text.done"})",
    R"({"type":"response.completed","sequence_number":12,"response":{"id":"r","object":"response","output":[{"type":"message","content":[{"type":"output_text","text":"hi","annotations":[]}]}],"usage":{"input_tokens":36,"input_tokens_details":{"cached_tokens":0},"output_tokens":87,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":123}}})",
    R"({"type":"response.incomplete","response":{"usage":{"output_tokens":2},"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}})",
    R"({"response":{"usage":{"input_tokens":1}},"usage":{"prompt_tokens":9}})",
    R"({"usage":{"prompt_tokens":9},"response":{"usage":{"input_tokens":1}}})",
    R"({"usage":null,"response":{"usage":{"input_tokens":1,"output_tokens":2}}})",
    R"({"response":{"output":[{"usage":{"input_tokens":5}}],"meta":{"usage":{"output_tokens":5}}}})",
    R"({"response":{"usage":[{"input_tokens":5}],"x":{"input_tokens":6}}})",
    R"({"response":{"usage":{"input_tokens":5,"nested":{"output_tokens":6}},"more":{"output_tokens":7}}})",
    R"({"response":[{"usage":{"input_tokens":5}}]})",
    R"({"response":"text","sequence_number":3})",
    R"({"data":{"response":{"usage":{"input_tokens":5}}}})",
    // names: escaped, longer than the buffer, near misses
    R"({"cho\u0069ces":[1],"\u0075sage":{"prompt_tokens":2}})",
    R"({"choicesX":[1],"choices_and_a_much_longer_name_than_any_we_read":[1],"usag":{}})",
    R"({})",
    R"(  {"choices":[1]}  )",
    // malformed or not an object
    R"([{"choices":[]}])",
    R"("text")",
    R"(42)",
    R"(null)",
    R"()",
    R"({"choices":[1,]})",
    R"({"choices":[1])",
    R"({"choices":[1]} x)",
    R"({}{})",
    R"({'a':1})",
    "{\"a\":\"\xff\"}",
};

TEST(EventScan, AgreesWithTheDomOnEverySample) {
  for (const auto& s : samples) expect_same(s);
}

TEST(EventScan, AgreesOnEveryPrefixOfTheSamples) {
  // Truncated payloads (an upstream cut mid-event) are refused like the DOM parser refuses them.
  for (const auto& s : samples)
    for (std::size_t i = 0; i < s.size(); ++i) expect_same(std::string_view(s).substr(0, i));
}

TEST(EventScan, NestingBeyondTheParserDepthIsRefused) {
  std::string deep(40, '[');
  deep = "{\"a\":" + deep + std::string(40, ']') + "}";
  event_facts f;
  EXPECT_FALSE(scan_event(deep, f));
  expect_same(deep);
}

// What upstreams send, compact and spaced, in any language: the skim reads it (the SAX scan, two to
// three times dearer per event, is for what it is not sure of).
TEST(EventScan, TheSkimIsSureOfTheEventsUpstreamsSend) {
  const std::vector<std::string> sent = {
      R"({"id":"chatcmpl-9x","object":"chat.completion.chunk","created":1733500000,"model":"gpt-4o-mini","system_fingerprint":"fp_0","choices":[{"index":0,"delta":{"content":" token"},"logprobs":null,"finish_reason":null}]})",
      R"({ "id" : "chatcmpl-9x", "choices" : [ { "index" : 0, "delta" : { "content" : "caf\u00e9 \"quoted\"\n" }, "finish_reason" : null } ] })",
      "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x98\x80 \xef\xbf\xbd\"}}]}",
      R"({"choices":[{"index":0,"delta":{},"logprobs":{"content":[{"token":"a","logprob":-1.2e-05,"bytes":[97],"top_logprobs":[{"token":"b","logprob":-11.25,"bytes":[98]}]}]},"finish_reason":"stop"}]})",
      R"({"id":"c","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":34,"total_tokens":46,"prompt_tokens_details":{"cached_tokens":0}}})",
      R"({"type":"response.output_text.delta","sequence_number":7,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"hi"})",
      R"({"type":"response.completed","sequence_number":40,"response":{"id":"resp_abc","status":"completed","usage":{"input_tokens":3,"output_tokens":4}}})",
      "{\"type\":\"response.created\",\n  \"response\" :\t{ \"id\" : \"resp_1\" , \"output\" : [ ] } }\r\n",
      R"({"error":{"message":"overloaded","type":"server_error","param":null,"code":null}})",
  };
  for (const auto& s : sent) {
    SCOPED_TRACE(s);
    EXPECT_TRUE(skim_agrees(s));
    expect_same(s);
  }
}

TEST(EventScan, TheSkimLeavesToTheSaxScanWhatItIsNotSureOf) {
  const std::vector<std::string> unsure = {
      R"({"\u0075sage":{"prompt_tokens":2}})",               // a name of interest, escaped
      R"({"type":"response.\u0063ompleted"})",              // a type, escaped
      R"({"usage":{"prompt_tokens":1234567890123456789}})",  // 19 digits of interest
      R"({"a":"\ud83d\ude00"})",                             // surrogate escapes
      R"({"a":"\ud83d"})",
      R"({"a":1e99999})",                                    // an exponent it does not read
      "{\"a\":\"\xc0\x80\"}",                                // an overlong form
      "{\"a\":\"\xed\xa0\x80\"}",                            // a surrogate
      "{\"a\":\"\xf4\x90\x80\x80\"}",                        // above U+10FFFF
      "{\"a\":\"\xe4\xb8\"}",                                // cut short
      R"({"a":01})", R"({"a":-})", R"({"a":1.})", R"({"a":tru})", "{\"a\":\"\x01\"}",
      R"([1])", R"({"a":1}])",
  };
  for (const auto& s : unsure) {
    SCOPED_TRACE(s);
    event_facts f;
    EXPECT_EQ(detail::skim_event(s, f), detail::skim_verdict::unsure);
    expect_same(s);
  }
  const std::string deep = "{\"a\":" + std::string(30, '[') + std::string(30, ']') + "}";
  event_facts f;
  EXPECT_EQ(detail::skim_event(deep, f), detail::skim_verdict::unsure);
  expect_same(deep);
}

// The skim steps over strings eight bytes at a time: each kind of byte that ends a run, at every
// place in and around one such step, must be read as the SAX scan reads it.
TEST(EventScan, TheSkimReadsEveryByteOfAStringWhereverItFalls) {
  const std::vector<std::string> specials = {"\\\"", "\\\\", "\\n", "\\u00e9", "\xc3\xa9", "\xe2\x82\xac",
                                             "\xf0\x9f\x98\x80", "\x1f", "\xff", "\"", "\xc3", "\\"};
  for (std::size_t len = 0; len < 20; ++len)
    for (std::size_t at = 0; at <= len; ++at)
      for (const auto& special : specials) {
        std::string text(len, 'x');
        text.insert(at, special);
        expect_same("{\"choices\":[{\"delta\":{\"content\":\"" + text + "\"}}],\"usage\":{\"prompt_tokens\":3}}");
        expect_same("{\"response\":{\"id\":\"" + text + "\"}}");
      }
}

// A name twice (JSON allows it; a DOM keeps one): the skim and the SAX scan read the values that
// lie where each fact is read from, not values under the same name elsewhere.
TEST(EventScan, TheSkimAndTheSaxScanReadDuplicateNamesAlike) {
  for (const char* twice : {R"({"usage":{"prompt_tokens":1},"usage":[5]})",
                            R"({"response":{"usage":{"input_tokens":1},"usage":[5]}})",
                            R"({"response":{"usage":1},"response":[{"input_tokens":3}]})",
                            R"({"response":{"id":"a"},"response":["b"]})",
                            R"({"response":{"id":"a"},"response":{"id":"b\n"}})",
                            R"({"usage":{"prompt_tokens":1},"usage":{"completion_tokens":2},"usage":null})",
                            R"({"type":"response.completed","type":"x","choices":[1,2],"choices":[3]})"}) {
    SCOPED_TRACE(twice);
    EXPECT_TRUE(skim_agrees(twice));
  }
}

TEST(EventScan, CountsChoicesAndReadsUsage) {

  event_facts f;
  ASSERT_TRUE(scan_event(samples[1], f));
  EXPECT_TRUE(f.choices_array);
  EXPECT_EQ(f.choices, 3u);
  ASSERT_TRUE(scan_event(samples[3], f));
  EXPECT_EQ(f.choices, 0u);
  EXPECT_TRUE(f.usage_object);
  EXPECT_EQ(f.prompt_tokens, 1);
  EXPECT_EQ(f.completion_tokens, 2);
  EXPECT_FALSE(f.has_error);
}

TEST(EventScan, ReadsTheResponsesUsageAndSequenceNumber) {
  event_facts f;
  ASSERT_TRUE(scan_event(
      R"({"type":"response.completed","sequence_number":12,"response":{"usage":{"input_tokens":36,"input_tokens_details":{"cached_tokens":4},"output_tokens":87}}})",
      f));
  EXPECT_EQ(f.type, event_facts::type_kind::completed);
  EXPECT_TRUE(f.usage_object);
  EXPECT_EQ(f.input_tokens, 36);
  EXPECT_EQ(f.output_tokens, 87);
  EXPECT_EQ(f.sequence_number, 12);
  ASSERT_TRUE(scan_event(R"({"type":"response.output_text.delta","sequence_number":3,"delta":"x"})", f));
  EXPECT_EQ(f.type, event_facts::type_kind::text_delta);
  EXPECT_FALSE(f.usage_object);
}

TEST(EventScan, FindsTheResponseObjectWhateverTheWhitespace) {
  event_facts f;
  for (const char* lifecycle : {R"({"type":"response.created","response":{"id":"r"}})",
                                R"({"type": "response.created", "response": {"id": "r"}})",
                                "{\"type\":\"response.created\",\n  \"response\" :\t{ \"id\" : \"r\" } }"}) {
    ASSERT_TRUE(scan_event(lifecycle, f)) << lifecycle;
    EXPECT_TRUE(f.response_object) << lifecycle;
  }
  for (const char* other : {R"({"type":"x","item":{"response":{}}})", R"({"response":"text"})",
                            R"({"delta":"\"response\":{"})"}) {
    ASSERT_TRUE(scan_event(other, f)) << other;
    EXPECT_FALSE(f.response_object) << other;
  }
}

}  // namespace
}  // namespace sluice::proxy
