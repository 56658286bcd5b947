// proxy/request_validation: numbers that do not fit a double are refused wherever they sit in the
// body (named by their path), and function tools' parameter schemas are copied out for the check.
#include <gtest/gtest.h>

#include <string>

#include <boost/json/serialize.hpp>

#include "proxy/request_validation.hpp"

using namespace sluice;
using namespace sluice::proxy;
namespace json = boost::json;

namespace {

std::string chat(const std::string& extra) {
  return R"({"model":"m","messages":[{"role":"user","content":"x"}])" + extra + "}";
}

void expect_refused(api which, const std::string& body, const std::string& param) {
  auto s = validate_request(which, body);
  ASSERT_FALSE(s.has_value()) << body;
  EXPECT_EQ(s.err().code, errc::bad_request) << body;
  EXPECT_EQ(s.err().param, param) << body << ": " << s.err().message;
}

}  // namespace

TEST(RequestValidation, NonFiniteNumbersAreRefusedByPath) {
  expect_refused(api::chat_completions, chat(R"(,"temperature":1e400)"), "temperature");
  expect_refused(api::chat_completions, chat(R"(,"top_p":-1e400)"), "top_p");
  expect_refused(api::chat_completions, R"({"model":"m","messages":[{"role":"user","content":1e999}]})",
                 "messages[0].content");
  expect_refused(api::chat_completions,
                 R"({"model":"m","messages":[{"role":"user","content":"a"},{"role":"user","content":[{"type":"text","n":[1,2,1.8e308]}]}]})",
                 "messages[1].content[0].n[2]");
  expect_refused(api::chat_completions, chat(R"(,"logit_bias":{"50256":1e500})"), "logit_bias.50256");
  expect_refused(api::chat_completions,
                 chat(R"(,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"maximum":1e400}}})"),
                 "response_format.json_schema.schema.maximum");
  expect_refused(api::responses, R"({"model":"m","input":"x","max_output_tokens":1e400})", "max_output_tokens");
  expect_refused(api::completions, R"({"model":"m","prompt":"x","frequency_penalty":-9e999})", "frequency_penalty");
  auto s = validate_request(api::chat_completions, chat(R"(,"temperature":1e400)"));
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.err().message.find("'temperature'"), std::string::npos) << s.err().message;
}

TEST(RequestValidation, ExponentOverflowIsRefused) {
  // Boost.JSON gives up on an exponent that does not fit its own counter: a parse error, no path.
  auto s = validate_request(api::chat_completions, chat(R"(,"temperature":1e99999999999999999999)"));
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.err().code, errc::bad_request);
  EXPECT_EQ(s.err().param, "");
  EXPECT_NE(s.err().message.find("exponent"), std::string::npos) << s.err().message;
}

TEST(RequestValidation, FiniteNumbersPass) {
  for (const char* extra : {R"(,"temperature":1.7976931348623157e308)", R"(,"temperature":1e-400)",
                            R"(,"temperature":-0.0)", R"(,"seed":18446744073709551616)", R"(,"top_p":0.5)"}) {
    auto s = validate_request(api::chat_completions, chat(extra));
    EXPECT_TRUE(s.has_value()) << extra << ": " << (s ? "" : s.err().message);
  }
}

TEST(RequestValidation, ExtractsFunctionToolSchemas) {
  auto s = validate_request(api::chat_completions, chat(R"(,"tools":[
      {"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}},
      {"type":"custom","custom":{"name":"free"}},
      {"type":"function","function":{"name":"no_args"}},
      {"type":"function","function":{"name":"null_args","parameters":null}},
      {"type":"function","function":{"name":"any","parameters":true}}])"));
  ASSERT_TRUE(s.has_value()) << s.err().message;
  ASSERT_EQ(s->tool_schemas.size(), 2u);
  EXPECT_EQ(s->tool_schemas[0].param, "tools[0].function.parameters");
  EXPECT_EQ(s->tool_schemas[0].name, "get_weather");
  EXPECT_EQ(json::serialize(s->tool_schemas[0].schema), R"({"type":"object","properties":{"city":{"type":"string"}}})");
  EXPECT_EQ(s->tool_schemas[1].param, "tools[4].function.parameters");

  auto r = validate_request(api::responses, R"({"model":"m","input":"x","tools":[{"type":"web_search_preview"},
      {"type":"function","name":"f","parameters":{"type":"object"},"strict":false}]})");
  ASSERT_TRUE(r.has_value()) << r.err().message;
  ASSERT_EQ(r->tool_schemas.size(), 1u);
  EXPECT_EQ(r->tool_schemas[0].param, "tools[1].parameters");
  EXPECT_EQ(r->tool_schemas[0].name, "f");

  auto none = validate_request(api::chat_completions, chat(""));
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->tool_schemas.empty());
  // Legacy completions have no tools: whatever is there is the upstream's business.
  auto legacy = validate_request(api::completions, R"({"model":"m","prompt":"x","tools":7})");
  ASSERT_TRUE(legacy.has_value());
  EXPECT_TRUE(legacy->tool_schemas.empty());
}

TEST(RequestValidation, MalformedToolsNameTheField) {
  expect_refused(api::chat_completions, chat(R"(,"tools":{})"), "tools");
  expect_refused(api::chat_completions, chat(R"(,"tools":[3])"), "tools[0]");
  expect_refused(api::chat_completions, chat(R"(,"tools":[{"type":7}])"), "tools[0].type");
  expect_refused(api::chat_completions, chat(R"(,"tools":[{"type":"function"}])"), "tools[0].function");
  expect_refused(api::chat_completions, chat(R"(,"tools":[{"type":"function","function":"f"}])"), "tools[0].function");
  expect_refused(api::chat_completions,
                 chat(R"(,"tools":[{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"b","parameters":"{}"}}])"),
                 "tools[1].function.parameters");
  expect_refused(api::responses, R"({"model":"m","input":"x","tools":[{"type":"function","name":"f","parameters":[1]}]})",
                 "tools[0].parameters");
}

TEST(RequestValidation, AMemberGivenTwiceIsRefusedByItsPath) {
  // A parse keeps one copy; an upstream may act on the other: never forwarded.
  expect_refused(api::chat_completions, R"({"model":"m","model":"n","messages":[{"role":"user","content":"x"}]})", "model");
  expect_refused(api::chat_completions, chat(R"(,"stream":false,"stream":true)"), "stream");
  expect_refused(api::responses, R"({"model":"m","input":"x","text":{"format":{"type":"text"},"format":{"type":"json_schema"}}})",
                 "text.format");
  expect_refused(api::chat_completions, chat(R"(,"tools":[{"type":"function","function":{"name":"a","name":"b"}}])"),
                 "tools[0].function.name");
  expect_refused(api::chat_completions,
                 R"({"model":"m","messages":[{"role":"user","content":"x"},{"role":"user","content":"y","content":"z"}]})",
                 "messages[1].content");
  // The same name in different objects, and names inside strings, are no repeats.
  EXPECT_TRUE(validate_request(api::chat_completions,
                               R"({"model":"m","messages":[{"role":"user","content":"a:b,\"model\":1"},{"role":"user","content":"y"}],"metadata":{"model":"x"}})")
                  .has_value());
}

// POST /v1/embeddings: every shape of `input` the API takes, its size for the cost estimate, and
// each malformed field refused by name.
TEST(RequestValidation, EmbeddingsInputsAndTheirRefusals) {
  auto ok = [](std::string_view body) {
    auto s = validate_request(api::embeddings, body);
    EXPECT_TRUE(static_cast<bool>(s)) << body << ": " << (s ? "" : s.err().message);
    return s ? s->prompt_chars : 0;
  };
  EXPECT_EQ(ok(R"({"model":"e","input":"hello"})"), 5u);
  EXPECT_EQ(ok(R"({"model":"e","input":["ab","cde"],"dimensions":8,"encoding_format":"base64"})"), 5u);
  EXPECT_EQ(ok(R"({"model":"e","input":[1,2,3]})"), 12u);
  EXPECT_EQ(ok(R"({"model":"e","input":[[1,2],[3]],"encoding_format":"float"})"), 12u);
  EXPECT_EQ(ok(R"( { "model" : "e" , "input" : "hello" } )"), 5u);
  auto param = [](std::string_view body) {
    auto s = validate_request(api::embeddings, body);
    EXPECT_FALSE(static_cast<bool>(s)) << body;
    return s ? std::string("(accepted)") : s.err().param;
  };
  EXPECT_EQ(param(R"({"model":"e"})"), "input");
  EXPECT_EQ(param(R"({"model":"e","input":[]})"), "input");
  EXPECT_EQ(param(R"({"model":"e","input":7})"), "input");
  EXPECT_EQ(param(R"({"model":"e","input":[[]]})"), "input[0]");
  EXPECT_EQ(param(R"({"model":"e","input":[[1,-2]]})"), "input[0]");
  EXPECT_EQ(param(R"({"model":"e","input":["a",{}]})"), "input[1]");
  EXPECT_EQ(param(R"({"model":"e","input":"a","dimensions":0})"), "dimensions");
  EXPECT_EQ(param(R"({"model":"e","input":"a","dimensions":1.5})"), "dimensions");
  EXPECT_EQ(param(R"({"model":"e","input":"a","encoding_format":"int8"})"), "encoding_format");
  EXPECT_EQ(param(R"({"model":"e","input":"a","stream":true})"), "stream");
  EXPECT_EQ(param(R"({"input":"a"})"), "model");
}

// POST /v1/moderations: no model needed; input a string, strings or content parts.
TEST(RequestValidation, ModerationsInputsAndTheirRefusals) {
  for (std::string_view body : {R"({"input":"hello"})", R"({"model":"m","input":["a","b"]})",
                                R"({"input":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"https://x/y.png"}}]})"}) {
    auto s = validate_request(api::moderations, body);
    EXPECT_TRUE(static_cast<bool>(s)) << body << ": " << (s ? "" : s.err().message);
  }
  auto param = [](std::string_view body) {
    auto s = validate_request(api::moderations, body);
    EXPECT_FALSE(static_cast<bool>(s)) << body;
    return s ? std::string("(accepted)") : s.err().param;
  };
  EXPECT_EQ(param(R"({})"), "input");
  EXPECT_EQ(param(R"({"input":[]})"), "input");
  EXPECT_EQ(param(R"({"input":[{"type":"text"}]})"), "input[0]");
  EXPECT_EQ(param(R"({"input":[{"type":"audio","audio":{}}]})"), "input[0]");
  EXPECT_EQ(param(R"({"input":"x","model":""})"), "model");
  EXPECT_EQ(param(R"({"input":"x","stream":true})"), "stream");
  EXPECT_FALSE(static_cast<bool>(validate_request(api::embeddings, R"({"input":"x"})"))) << "embeddings still need a model";
}
