// proxy/structured_output: schema extraction from request bodies, policy parsing, the whole-answer
// check, the header/event forms of a verdict, and the per-event stream check (with its cost).
#include <gtest/gtest.h>

#include <chrono>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "config/option_table.hpp"
#include "proxy/request_validation.hpp"
#include "proxy/structured/structured_output.hpp"

using namespace sluice;
using namespace sluice::proxy;
namespace json = boost::json;

namespace {

const char* kSchema = R"({"type":"object","properties":{"city":{"type":"string"},"n":{"type":"integer"}},"required":["city"],"additionalProperties":false})";

std::string chat_with_format(const std::string& fmt) {
  return R"({"model":"m","messages":[{"role":"user","content":"x"}],"response_format":)" + fmt + "}";
}

std::string responses_with_format(const std::string& fmt) {
  return R"({"model":"m","input":"x","text":{"format":)" + fmt + "}}";
}

output_contract contract(api which, schema_policy p, bool events = true) {
  schema::schema_cache cache;
  output_schema_request w;
  w.schema = json::parse(kSchema);
  w.param = "response_format.json_schema.schema";
  w.name = "city";
  schema_options o;
  o.policy = p;
  auto c = make_output_contract(which, std::move(w), {{}, events ? "1" : ""}, o, cache);
  EXPECT_TRUE(c.has_value());
  EXPECT_TRUE(c->has_value());
  return **c;
}

}  // namespace

TEST(StructuredOutput, PolicyParsing) {
  EXPECT_EQ(*parse_schema_policy("annotate"), schema_policy::annotate);
  EXPECT_EQ(*parse_schema_policy("reject"), schema_policy::reject);
  EXPECT_EQ(*parse_schema_policy("retry"), schema_policy::retry);
  EXPECT_FALSE(parse_schema_policy("Reject").has_value());
  EXPECT_FALSE(parse_schema_policy("").has_value());
  EXPECT_EQ(to_string(schema_policy::retry), "retry");
}

TEST(StructuredOutput, OptionsRegisterAndValidate) {
  schema_options o;
  config::option_table t;
  o.register_options(t);
  auto r = t.apply_yaml_text("schema-policy: reject\nschema-retries: 3\nschema-cache-entries: 10\n"
                             "schema-cache-bytes: 1MiB\nschema-cache-ttl: 5m\n");
  ASSERT_TRUE(r.has_value()) << r.err().message;
  EXPECT_EQ(o.policy, schema_policy::reject);
  EXPECT_EQ(o.retries, 3u);
  EXPECT_EQ(o.cache_options().max_entries, 10u);
  EXPECT_EQ(o.cache_options().max_bytes, 1024u * 1024u);
  EXPECT_EQ(o.cache_options().ttl, std::chrono::minutes(5));
  EXPECT_TRUE(o.validate().has_value());
  EXPECT_FALSE(t.apply_yaml_text("schema-policy: loud\n").has_value());
  o.cache_entries = 0;
  EXPECT_FALSE(o.validate().has_value());
}

TEST(StructuredOutput, ExtractsChatJsonSchema) {
  auto s = validate_request(api::chat_completions,
                            chat_with_format(std::string(R"({"type":"json_schema","json_schema":{"name":"city","strict":true,"schema":)") +
                                             kSchema + "}}"));
  ASSERT_TRUE(s.has_value()) << s.err().message;
  ASSERT_TRUE(s->output_schema.has_value());
  EXPECT_EQ(s->output_schema->name, "city");
  EXPECT_TRUE(s->output_schema->strict);
  EXPECT_EQ(s->output_schema->param, "response_format.json_schema.schema");
  EXPECT_EQ(s->output_schema->schema.at("required").at(0), "city");
}

TEST(StructuredOutput, ExtractsResponsesTextFormat) {
  auto s = validate_request(api::responses, responses_with_format(std::string(R"({"type":"json_schema","name":"c","schema":)") +
                                                                  kSchema + R"(,"strict":true})"));
  ASSERT_TRUE(s.has_value()) << s.err().message;
  ASSERT_TRUE(s->output_schema.has_value());
  EXPECT_EQ(s->output_schema->param, "text.format.schema");
  EXPECT_EQ(s->output_schema->name, "c");
}

TEST(StructuredOutput, NoSchemaForTextAndJsonObject) {
  for (const char* fmt : {R"({"type":"text"})", R"({"type":"json_object"})", "null"}) {
    auto s = validate_request(api::chat_completions, chat_with_format(fmt));
    ASSERT_TRUE(s.has_value()) << fmt;
    EXPECT_FALSE(s->output_schema.has_value()) << fmt;
  }
  auto plain = validate_request(api::chat_completions, R"({"model":"m","messages":[{"role":"user"}]})");
  ASSERT_TRUE(plain.has_value());
  EXPECT_FALSE(plain->output_schema.has_value());
}

TEST(StructuredOutput, MalformedFormatsNameTheField) {
  struct row {
    std::string body;
    api which;
    std::string param;
  };
  const row rows[] = {
      {chat_with_format("3"), api::chat_completions, "response_format"},
      {chat_with_format(R"({"type":"yaml"})"), api::chat_completions, "response_format.type"},
      {chat_with_format(R"({"type":"json_schema"})"), api::chat_completions, "response_format.json_schema"},
      {chat_with_format(R"({"type":"json_schema","json_schema":{"schema":{}}})"), api::chat_completions,
       "response_format.json_schema.name"},
      {chat_with_format(R"({"type":"json_schema","json_schema":{"name":"x","strict":"yes","schema":{}}})"),
       api::chat_completions, "response_format.json_schema.strict"},
      {chat_with_format(R"({"type":"json_schema","json_schema":{"name":"x","schema":[1]}})"), api::chat_completions,
       "response_format.json_schema.schema"},
      {responses_with_format(R"({"type":"json_schema","schema":{}})"), api::responses, "text.format.name"},
      {R"({"model":"m","input":"x","text":7})", api::responses, "text"},
      {R"({"model":"m","input":7})", api::responses, "input"},
      {R"({"input":"x"})", api::responses, "model"},
      {R"({"model":"m","input":"x","stream":"yes"})", api::responses, "stream"},
  };
  for (const auto& r : rows) {
    auto s = validate_request(r.which, r.body);
    ASSERT_FALSE(s.has_value()) << r.body;
    EXPECT_EQ(s.err().code, errc::bad_request);
    EXPECT_EQ(s.err().param, r.param) << r.body << ": " << s.err().message;
  }
}

TEST(StructuredOutput, ResponsesRequestValidation) {
  auto s = validate_request(api::responses, R"({"model":"m","input":[{"role":"user","content":"hi"}],"stream":true})");
  ASSERT_TRUE(s.has_value());
  EXPECT_TRUE(s->stream);
  EXPECT_EQ(s->model, "m");
}

TEST(StructuredOutput, ContractPolicyHeaderAndCompileErrors) {
  schema::schema_cache cache;
  schema_options o;
  auto bad_header = make_output_contract(api::chat_completions, std::nullopt, {"sometimes", ""}, o, cache);
  ASSERT_FALSE(bad_header.has_value());
  EXPECT_EQ(bad_header.err().param, "x-sluice-schema-policy");

  auto none = make_output_contract(api::chat_completions, std::nullopt, {"reject", ""}, o, cache);
  ASSERT_TRUE(none.has_value());
  EXPECT_FALSE(none->has_value());

  output_schema_request w;
  w.schema = json::parse(R"({"type":"object","properties":{"a":{"unevaluatedProperties":false}}})");
  w.param = "response_format.json_schema.schema";
  w.name = "x";
  auto refused = make_output_contract(api::chat_completions, std::move(w), {}, o, cache);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.err().code, errc::bad_request);
  EXPECT_EQ(refused.err().param, "response_format.json_schema.schema/properties/a/unevaluatedProperties");
  EXPECT_NE(refused.err().message.find("unevaluatedProperties"), std::string::npos) << refused.err().message;

  output_schema_request w2;
  w2.schema = json::parse(kSchema);
  w2.param = "text.format.schema";
  w2.name = "c";
  auto c = make_output_contract(api::responses, std::move(w2), {"retry", "true"}, o, cache);
  ASSERT_TRUE(c.has_value());
  ASSERT_TRUE(c->has_value());
  EXPECT_EQ((*c)->policy, schema_policy::retry);
  EXPECT_EQ((*c)->retries, 2u);
  EXPECT_TRUE((*c)->stream_event);
  EXPECT_TRUE((*c)->keeps_request_body());
}

// The npm SDK's zodTextFormat/zodResponseFormat (zod 4) say draft 7 and use `definitions`: such a
// schema is a contract, read in its draft; a dialect sluice does not know is a 400 naming $schema.
TEST(StructuredOutput, Draft7SchemasFromTheSdkAreContracts) {
  schema::schema_cache cache;
  schema_options o;
  auto make = [&](const char* schema) {
    output_schema_request w;
    w.schema = json::parse(schema);
    w.param = "text.format.schema";
    w.name = "tree";
    return make_output_contract(api::responses, std::move(w), {}, o, cache);
  };
  auto c = make(R"({"$schema":"http://json-schema.org/draft-07/schema#","type":"object",
      "properties":{"root":{"$ref":"#/definitions/__schema0"},"pair":{"type":"array","items":[{"type":"string"}],"additionalItems":false}},
      "required":["root","pair"],"additionalProperties":false,
      "definitions":{"__schema0":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/definitions/__schema0"}}},
        "required":["kids"],"additionalProperties":false}}})");
  ASSERT_TRUE(c.has_value()) << c.err().message;
  ASSERT_TRUE(c->has_value());
  auto out = [](std::string text) {
    json::object part{{"type", "output_text"}, {"text", text}};
    json::object msg{{"type", "message"}, {"content", json::array{part}}};
    return json::serialize(json::object{{"object", "response"}, {"output", json::array{msg}}});
  };
  EXPECT_FALSE(check_whole(**c, out(R"({"root":{"kids":[{"kids":[]}]},"pair":["a"]})")));
  auto bad = check_whole(**c, out(R"({"root":{"kids":[{"kids":[]}]},"pair":["a","b"]})"));
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad.error->instance_path, "/pair/1");
  EXPECT_EQ(bad.error->schema_path, "/properties/pair/additionalItems");

  auto old = make(R"({"$schema":"http://json-schema.org/draft-04/schema#","type":"object"})");
  ASSERT_FALSE(old.has_value());
  EXPECT_EQ(old.err().code, errc::bad_request);
  EXPECT_EQ(old.err().param, "text.format.schema/$schema");
}

TEST(StructuredOutput, WholeAnswers) {
  auto c = contract(api::chat_completions, schema_policy::annotate);
  auto chat = [](std::string content) {
    json::object msg{{"role", "assistant"}, {"content", content}};
    json::object choice{{"index", 0}, {"message", msg}};
    return json::serialize(json::object{{"choices", json::array{choice}}});
  };
  EXPECT_FALSE(check_whole(c, chat(R"({"city":"Oslo","n":3})")));
  auto bad = check_whole(c, chat(R"({"city":"Oslo","n":"three"})"));
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad.error->instance_path, "/n");
  EXPECT_FALSE(bad.choice) << "one choice asked for, index 0: the verdict does not name it";
  EXPECT_TRUE(check_whole(c, chat(R"({"city":)")));
  EXPECT_TRUE(check_whole(c, R"({"choices":[]})"));
  EXPECT_TRUE(check_whole(c, "not json"));

  auto r = contract(api::responses, schema_policy::annotate);
  std::string resp =
      R"({"object":"response","output":[{"type":"reasoning"},{"type":"message","content":[{"type":"output_text","text":"{\"city\":"},{"type":"output_text","text":"\"Rome\"}"}]}]})";
  EXPECT_FALSE(check_whole(r, resp));
  EXPECT_TRUE(check_whole(r, R"({"output":[]})"));
}

TEST(StructuredOutput, VerdictForms) {
  EXPECT_EQ(verdict_header_value(std::nullopt), "valid");
  schema::validation_error e;
  e.instance_path = "/n";
  e.schema_path = "/properties/n/type";
  e.message = "expected integer\r\nX-Evil: 1 \xC3\xA9";
  auto h = verdict_header_value(e);
  EXPECT_EQ(h.rfind("invalid; path=/n; expected integer", 0), 0u) << h;
  for (char ch : h) EXPECT_TRUE(static_cast<unsigned char>(ch) >= 0x20 && static_cast<unsigned char>(ch) < 0x7f);
  EXPECT_EQ(verdict_json(std::nullopt), R"({"valid":true})");
  auto j = json::parse(verdict_json(e));
  EXPECT_EQ(j.at("valid"), false);
  EXPECT_EQ(j.at("instance_path"), "/n");
  EXPECT_EQ(j.at("schema_path"), "/properties/n/type");
  auto err = violation_error(e);
  EXPECT_EQ(err.code, errc::upstream_protocol);
  EXPECT_EQ(err.api_code, "schema_violation");
  EXPECT_EQ(err.param, "/n");
  EXPECT_NE(err.message.find("'/n'"), std::string::npos);
}

namespace {
std::string chat_chunk(std::string_view content, const char* finish = nullptr) {
  json::object delta{{"content", content}};
  json::object choice{{"index", 0}, {"delta", delta}, {"finish_reason", finish ? json::value(finish) : json::value()}};
  return json::serialize(json::object{{"id", "c"}, {"object", "chat.completion.chunk"}, {"choices", json::array{choice}}});
}
}  // namespace

TEST(StructuredOutput, StreamCheckRejectsAtFirstOffendingDelta) {
  auto c = contract(api::chat_completions, schema_policy::reject);
  stream_check chk(c);
  EXPECT_FALSE(chk.on_event(json::parse(chat_chunk(R"({"city":)")).as_object()));
  EXPECT_FALSE(chk.on_event(json::parse(chat_chunk(R"("Oslo","n":)")).as_object()));
  auto e = chk.on_event(json::parse(chat_chunk(R"("x)")).as_object());
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->api_code, "schema_violation");
  EXPECT_EQ(e->param, "/n");
  EXPECT_TRUE(chk.final_event().empty());  // reject: no annotate event
}

TEST(StructuredOutput, StreamCheckAnnotates) {
  auto c = contract(api::chat_completions, schema_policy::annotate);
  stream_check ok(c);
  EXPECT_FALSE(ok.on_event(json::parse(chat_chunk(R"({"city":"Oslo"})")).as_object()));
  EXPECT_FALSE(ok.on_event(json::parse(chat_chunk("", "stop")).as_object()));
  EXPECT_TRUE(ok.finished());
  EXPECT_FALSE(ok.on_done());
  EXPECT_EQ(ok.final_event(), "event: sluice.schema\ndata: {\"valid\":true}\n\n");

  stream_check incomplete(c);
  EXPECT_FALSE(incomplete.on_event(json::parse(chat_chunk(R"({"city":"Os)")).as_object()));
  EXPECT_FALSE(incomplete.on_done());  // annotate: recorded, not an error
  EXPECT_TRUE(incomplete.verdict().has_value());
  EXPECT_NE(incomplete.final_event().find("\"valid\":false"), std::string::npos);

  auto quiet = contract(api::chat_completions, schema_policy::annotate, false);
  stream_check q(quiet);
  EXPECT_TRUE(q.final_event().empty());  // not opted in
}

TEST(StructuredOutput, StreamCheckResponsesEvents) {
  auto c = contract(api::responses, schema_policy::reject);
  stream_check chk(c);
  EXPECT_FALSE(chk.on_event(json::parse(R"({"type":"response.created","response":{}})").as_object()));
  EXPECT_FALSE(chk.on_event(json::parse(R"({"type":"response.output_text.delta","delta":"{\"city\":\"R"})").as_object()));
  EXPECT_FALSE(chk.on_event(json::parse(R"({"type":"response.output_text.delta","delta":"ome\"}"})").as_object()));
  EXPECT_FALSE(chk.on_event(json::parse(R"({"type":"response.output_text.done","text":"..."})").as_object()));
  EXPECT_TRUE(chk.finished());
  EXPECT_FALSE(chk.verdict().has_value());

  stream_check cut(c);
  EXPECT_FALSE(cut.on_event(json::parse(R"({"type":"response.output_text.delta","delta":"{\"city\":"})").as_object()));
  auto e = cut.on_event(json::parse(R"({"type":"response.completed","response":{}})").as_object());
  ASSERT_TRUE(e.has_value());  // the document never completed
  EXPECT_EQ(e->api_code, "schema_violation");
}

// The cost the relay adds per streamed chunk: the lookups into the already parsed event plus the
// validator's feed of a small delta. Printed; asserted only loosely (machines and sanitizers vary).
TEST(StructuredOutput, StreamCheckCostPerChunk) {
  output_schema_request w;
  w.schema = json::parse(R"({"type":"object","properties":{"items":{"type":"array","items":{"type":"string"}}}})");
  w.param = "p";
  schema::schema_cache cache;
  auto c = make_output_contract(api::chat_completions, std::move(w), {"reject", ""}, schema_options{}, cache);
  ASSERT_TRUE(c.has_value() && c->has_value());
  constexpr int chunks = 200000;
  // Pre-parse the events (the relay has already parsed them): `{"items":["` then `abcd","` repeated.
  json::value first = json::parse(chat_chunk(R"({"items":["x)"));
  json::value mid = json::parse(chat_chunk(R"(abcd","ef)"));
  stream_check chk(**c);
  ASSERT_FALSE(chk.on_event(first.as_object()));
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < chunks; ++i) {
    auto e = chk.on_event(mid.as_object());
    if (e) FAIL() << e->message;
  }
  double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / chunks;
  std::printf("stream_check: %.0f ns per chunk (lookup + feed of a 9-byte delta)\n", ns);
#if !defined(__SANITIZE_ADDRESS__)
  EXPECT_LT(ns, 5000.0);
#endif
}

// --- n > 1, legacy completions -------------------------------------------------------------------

namespace {

output_contract contract_n(api which, schema_policy p, std::uint64_t n, std::uint64_t max_choices = 16) {
  static schema::schema_cache cache;
  output_schema_request w;
  w.schema = json::parse(kSchema);
  w.param = "response_format.json_schema.schema";
  w.name = "city";
  w.choices = n;
  schema_options o;
  o.policy = p;
  o.max_choices = max_choices;
  auto c = make_output_contract(which, std::move(w), {{}, "1"}, o, cache);
  EXPECT_TRUE(c.has_value()) << (c ? "" : c.err().message);
  return **c;
}

std::string chat_choices(std::initializer_list<std::string> contents) {
  json::array arr;
  std::int64_t i = 0;
  for (const auto& content : contents)
    arr.push_back(json::object{{"index", i++}, {"message", json::object{{"role", "assistant"}, {"content", content}}}});
  return json::serialize(json::object{{"choices", std::move(arr)}});
}

std::string chunk_for(std::int64_t index, std::string_view content, const char* finish = nullptr, bool legacy = false) {
  json::object choice{{"index", index}, {"finish_reason", finish ? json::value(finish) : json::value()}};
  if (legacy) choice["text"] = content;
  else choice["delta"] = json::object{{"content", content}};
  return json::serialize(json::object{{"id", "c"}, {"choices", json::array{choice}}});
}

json::object obj(const std::string& s) { return json::parse(s).as_object(); }

const std::string kGood = R"({"city":"Oslo","n":3})";
const std::string kBad = R"({"city":"Oslo","n":"three"})";

}  // namespace

TEST(StructuredOutput, WholeAnswerChecksEveryChoice) {
  auto c = contract_n(api::chat_completions, schema_policy::reject, 3);
  EXPECT_FALSE(check_whole(c, chat_choices({kGood, kGood, kGood})));
  auto v = check_whole(c, chat_choices({kGood, kGood, kBad}));
  ASSERT_TRUE(v);
  ASSERT_TRUE(v.choice.has_value());
  EXPECT_EQ(*v.choice, 2u);
  EXPECT_EQ(v.error->instance_path, "/n");
  EXPECT_EQ(verdict_header_value(v).rfind("invalid; choice=2; path=/n; ", 0), 0u) << verdict_header_value(v);
  auto e = violation_error(*v.error, v.choice);
  EXPECT_EQ(e.api_code, "schema_violation");
  EXPECT_EQ(e.param, "/n");
  EXPECT_NE(e.message.find("choice 2"), std::string::npos) << e.message;
  EXPECT_EQ(json::parse(verdict_json(v.error, v.choice)).at("choice"), 2);

  // The first failing choice decides; a choice without text fails as "no output text".
  auto first = check_whole(c, chat_choices({kBad, R"({"nope")", kGood}));
  ASSERT_TRUE(first.choice.has_value());
  EXPECT_EQ(*first.choice, 0u) << "n > 1 names even choice 0";
  auto no_text = check_whole(c, R"({"choices":[{"index":0,"message":{"content":"{\"city\":\"a\"}"}},{"index":1,"message":{"content":null,"refusal":"no"}}]})");
  ASSERT_TRUE(no_text);
  EXPECT_EQ(*no_text.choice, 1u);
  EXPECT_EQ(no_text.error->what, schema::validation_error::kind::malformed_json);

  // The choice's own `index` names it, not its position.
  auto by_index = check_whole(c, R"({"choices":[{"index":1,"message":{"content":"{}"}},{"index":0,"message":{"content":"{\"city\":\"a\"}"}}]})");
  ASSERT_TRUE(by_index);
  EXPECT_EQ(*by_index.choice, 1u);

  // n = 1 but the upstream sent two: both are checked, and the second is named.
  auto one = contract_n(api::chat_completions, schema_policy::reject, 1);
  auto extra = check_whole(one, chat_choices({kGood, kBad}));
  ASSERT_TRUE(extra);
  EXPECT_EQ(*extra.choice, 1u);
}

TEST(StructuredOutput, LegacyCompletionsTextIsChecked) {
  auto s = validate_request(api::completions,
                            std::string(R"({"model":"m","prompt":"p","n":2,"response_format":{"type":"json_schema","json_schema":{"name":"c","schema":)") +
                                kSchema + "}}}");
  ASSERT_TRUE(s.has_value()) << s.err().message;
  ASSERT_TRUE(s->output_schema.has_value());
  EXPECT_EQ(s->output_schema->param, "response_format.json_schema.schema");
  EXPECT_EQ(s->output_schema->choices, 2u);

  auto echo = validate_request(api::completions,
                               R"({"model":"m","prompt":"p","echo":true,"response_format":{"type":"json_schema","json_schema":{"name":"c","schema":{}}}})");
  ASSERT_FALSE(echo.has_value());
  EXPECT_EQ(echo.err().param, "echo");
  auto echo_plain = validate_request(api::completions, R"({"model":"m","prompt":"p","echo":true,"response_format":{"type":"json_object"}})");
  EXPECT_TRUE(echo_plain.has_value()) << "no schema: echo is the upstream's business";

  auto c = contract_n(api::completions, schema_policy::reject, 2);
  EXPECT_FALSE(check_whole(c, R"({"object":"text_completion","choices":[{"text":"{\"city\":\"a\"}","index":0},{"text":"{\"city\":\"b\"}","index":1}]})"));
  auto bad = check_whole(c, R"({"choices":[{"text":"{\"city\":\"a\"}","index":0},{"text":"{\"city\":1}","index":1}]})");
  ASSERT_TRUE(bad);
  EXPECT_EQ(*bad.choice, 1u);
  EXPECT_EQ(bad.error->instance_path, "/city");

  stream_check chk(c);
  EXPECT_FALSE(chk.on_event(obj(chunk_for(0, R"({"city":)", nullptr, true))));
  EXPECT_FALSE(chk.on_event(obj(chunk_for(1, R"({"city":)", nullptr, true))));
  EXPECT_FALSE(chk.on_event(obj(chunk_for(0, R"("a"})", "stop", true))));
  auto e = chk.on_event(obj(chunk_for(1, "7", nullptr, true)));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->param, "/city");
  EXPECT_NE(e->message.find("choice 1"), std::string::npos) << e->message;
}

TEST(StructuredOutput, TooManyChoicesIs400NamingN) {
  EXPECT_EQ(schema_options{}.max_choices, 16u);
  schema::schema_cache cache;
  schema_options o;
  output_schema_request w;
  w.schema = json::parse(kSchema);
  w.param = "response_format.json_schema.schema";
  w.name = "x";
  w.choices = 17;
  auto r = make_output_contract(api::chat_completions, w, {}, o, cache);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.err().code, errc::bad_request);
  EXPECT_EQ(r.err().param, "n");
  EXPECT_NE(r.err().message.find("16"), std::string::npos) << r.err().message;
  EXPECT_EQ(cache.snapshot().compiles, 0u) << "refused before compiling";
  w.choices = 16;
  EXPECT_TRUE(make_output_contract(api::chat_completions, w, {}, o, cache).has_value());

  // The bound is a config key, 1..128.
  config::option_table t;
  o.register_options(t);
  ASSERT_TRUE(t.apply_yaml_text("schema-max-choices: 4\n").has_value());
  EXPECT_EQ(o.max_choices, 4u);
  EXPECT_TRUE(o.validate().has_value());
  o.max_choices = 0;
  EXPECT_FALSE(o.validate().has_value());
  o.max_choices = 129;
  EXPECT_FALSE(o.validate().has_value());

  // validate_request carries n (0 counts as 1) into the schema request.
  auto s = validate_request(api::chat_completions,
                            std::string(R"({"model":"m","n":20,"messages":[{"role":"user"}],"response_format":{"type":"json_schema","json_schema":{"name":"c","schema":)") +
                                kSchema + "}}}");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->output_schema->choices, 20u);
}

TEST(StructuredOutput, StreamCheckKeepsOneValidatorPerChoice) {
  auto c = contract_n(api::chat_completions, schema_policy::reject, 2);
  stream_check chk(c);
  // Interleaved deltas: each choice's document is parsed on its own.
  EXPECT_FALSE(chk.on_event(obj(chunk_for(0, R"({"city":"O)"))));
  EXPECT_FALSE(chk.on_event(obj(chunk_for(1, R"({"ci)"))));
  EXPECT_FALSE(chk.on_event(obj(chunk_for(0, R"(slo"})"))));
  EXPECT_FALSE(chk.on_event(obj(chunk_for(1, R"(ty":"Rome","n":)"))));
  EXPECT_FALSE(chk.on_event(obj(chunk_for(0, "", "stop"))));
  EXPECT_FALSE(chk.finished()) << "choice 1 still open";
  auto e = chk.on_event(obj(chunk_for(1, R"("x")")));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->param, "/n");
  EXPECT_NE(e->message.find("choice 1"), std::string::npos) << e->message;
  EXPECT_EQ(chk.choices_tracked(), 2u);
  ASSERT_TRUE(chk.full_verdict().choice.has_value());
  EXPECT_EQ(*chk.full_verdict().choice, 1u);

  // Several choices in one chunk, each with its finish; all complete -> valid.
  auto a = contract_n(api::chat_completions, schema_policy::annotate, 2);
  stream_check ok(a);
  json::array both{json::object{{"index", 0}, {"delta", json::object{{"content", kGood}}}, {"finish_reason", "stop"}},
                   json::object{{"index", 1}, {"delta", json::object{{"content", kGood}}}, {"finish_reason", "stop"}}};
  EXPECT_FALSE(ok.on_event(json::object{{"choices", both}}));
  EXPECT_TRUE(ok.finished());
  EXPECT_FALSE(ok.on_done());
  EXPECT_EQ(ok.final_event(), "event: sluice.schema\ndata: {\"valid\":true}\n\n");

  // A choice whose document never completed is caught at [DONE], and the event names it.
  stream_check cut(a);
  EXPECT_FALSE(cut.on_event(obj(chunk_for(0, kGood, "stop"))));
  EXPECT_FALSE(cut.on_event(obj(chunk_for(1, R"({"city":)"))));
  EXPECT_FALSE(cut.on_done());
  auto ev = cut.final_event();
  auto data = json::parse(ev.substr(ev.find("data: ") + 6));
  EXPECT_EQ(data.at("valid"), false);
  EXPECT_EQ(data.at("choice"), 1);
}

TEST(StructuredOutput, StreamCheckRefusesChoiceIndicesPastTheBound) {
  auto c = contract_n(api::chat_completions, schema_policy::reject, 2, 4);
  stream_check chk(c);
  EXPECT_FALSE(chk.on_event(obj(chunk_for(3, "{"))));
  auto e = chk.on_event(obj(chunk_for(4, "{")));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->api_code, "schema_violation");
  EXPECT_NE(e->message.find("choice index 4"), std::string::npos) << e->message;
  EXPECT_EQ(chk.choices_tracked(), 1u) << "no validator for the refused index";
  EXPECT_EQ(chk.verdict()->what, schema::validation_error::kind::limit_exceeded);

  auto negative = contract_n(api::chat_completions, schema_policy::annotate, 1, 4);
  stream_check neg(negative);
  EXPECT_FALSE(neg.on_event(obj(chunk_for(-1, "{"))));  // annotate: recorded only
  EXPECT_TRUE(neg.verdict().has_value());
  // Many distinct indices never make more than max_choices validators.
  stream_check many(contract_n(api::chat_completions, schema_policy::annotate, 1, 4));
  for (int i = 0; i < 1000; ++i) (void)many.on_event(obj(chunk_for(i, " ")));
  EXPECT_LE(many.choices_tracked(), 4u);
}

TEST(StructuredOutput, SchemaLimitOptions) {
  schema_options o;
  EXPECT_EQ(o.compile_limits().max_depth, 10u);
  EXPECT_EQ(o.compile_limits().max_properties, 5000u);
  EXPECT_EQ(o.compile_limits().max_enum_values, 1000u);
  EXPECT_EQ(o.compile_limits().max_total_chars, 120000u);
  config::option_table t;
  o.register_options(t);
  auto r = t.apply_yaml_text("schema-max-depth: 4\nschema-max-properties: 50\nschema-max-enum-values: 20\n"
                             "schema-max-total-chars: 300\n");
  ASSERT_TRUE(r.has_value()) << r.err().message;
  EXPECT_TRUE(o.validate().has_value());
  const schema::compile_limits l = o.cache_options().limits;  // the cache compiles under them
  EXPECT_EQ(l.max_depth, 4u);
  EXPECT_EQ(l.max_properties, 50u);
  EXPECT_EQ(l.max_enum_values, 20u);
  EXPECT_EQ(l.max_total_chars, 300u);
  for (const char* bad : {"schema-max-depth: 0\n", "schema-max-depth: 129\n", "schema-max-properties: 0\n",
                          "schema-max-enum-values: 0\n", "schema-max-enum-values: 200001\n", "schema-max-total-chars: 0\n"}) {
    schema_options b;
    config::option_table bt;
    b.register_options(bt);
    ASSERT_TRUE(bt.apply_yaml_text(bad).has_value()) << bad;
    EXPECT_FALSE(b.validate().has_value()) << bad;
  }
}

TEST(StructuredOutput, ResponseSchemaRefusedOverConfiguredLimits) {
  schema_options o;
  o.max_total_chars = 8;
  o.max_depth = 2;
  schema::schema_cache cache(o.cache_options());
  auto wanted = [](const char* schema) {
    output_schema_request w;
    w.schema = json::parse(schema);
    w.param = "response_format.json_schema.schema";
    w.name = "x";
    return w;
  };
  auto long_names = make_output_contract(api::chat_completions, wanted(R"({"properties":{"abcde":{},"fghij":{}}})"),
                                         {}, o, cache);
  ASSERT_FALSE(long_names.has_value());
  EXPECT_EQ(long_names.err().code, errc::bad_request);
  EXPECT_EQ(long_names.err().param, "response_format.json_schema.schema/properties/fghij");
  auto deep = make_output_contract(api::chat_completions,
                                   wanted(R"({"$defs":{"a":{"items":{"items":{"$ref":"#/$defs/b"}}},"b":{"items":{}}},"$ref":"#/$defs/a"})"),
                                   {}, o, cache);
  ASSERT_FALSE(deep.has_value());
  EXPECT_EQ(deep.err().param, "response_format.json_schema.schema/$defs/b/items");
  EXPECT_TRUE(make_output_contract(api::chat_completions, wanted(R"({"properties":{"abcd":{}}})"), {}, o, cache));
}

TEST(StructuredOutput, ToolSchemasAreCheckedThroughTheCache) {
  schema::schema_cache cache;
  auto tools_of = [](api which, const std::string& body) {
    auto s = validate_request(which, body);
    EXPECT_TRUE(s.has_value()) << body << ": " << (s ? "" : s.err().message);
    return s ? s->tool_schemas : std::vector<tool_schema_request>{};
  };
  auto chat_tools = [](const std::string& tools) {
    return R"({"model":"m","messages":[{"role":"user","content":"x"}],"tools":)" + tools + "}";
  };
  // A $ref into nothing, named under the tool's place in the request.
  auto dangling = tools_of(api::chat_completions, chat_tools(R"([{"type":"function","function":{"name":"ok","parameters":{"type":"object"}}},
      {"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"$ref":"#/$defs/city"}}}}}])"));
  auto e = check_tool_schemas(dangling, cache);
  ASSERT_FALSE(e.has_value());
  EXPECT_EQ(e.err().code, errc::bad_request);
  EXPECT_EQ(e.err().param, "tools[1].function.parameters/properties/city/$ref");
  EXPECT_NE(e.err().message.find("'get_weather'"), std::string::npos) << e.err().message;
  // Responses: tools[i].parameters; an endless in-place cycle; a malformed keyword.
  auto cycle = tools_of(api::responses, R"({"model":"m","input":"x","tools":[{"type":"function","name":"f",
      "parameters":{"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}}]})");
  auto c = check_tool_schemas(cycle, cache);
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.err().param, "tools[0].parameters/$defs/a");
  auto typo = tools_of(api::responses, R"({"model":"m","input":"x","tools":[{"type":"function","name":"f",
      "parameters":{"type":"object","properties":{"n":{"type":"int"}}}}]})");
  EXPECT_EQ(check_tool_schemas(typo, cache).err().param, "tools[0].parameters/properties/n/type");

  // A non-strict tool schema as real clients send it: annotations, draft 7, formats and keywords
  // sluice does not assert. Accepted (it validates nothing), and cached: the next request hits.
  const std::string real = chat_tools(R"([{"type":"function","function":{"name":"create_event","strict":false,
      "parameters":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","title":"CreateEvent",
        "description":"Creates an event","additionalProperties":false,"required":["title"],
        "properties":{"title":{"type":"string","description":"t","examples":["Standup"],"minLength":1},
          "start":{"type":"string","format":"date-time"},"duration":{"type":"string","format":"duration"},
          "attendees":{"type":"integer","format":"int32","default":1,"minimum":0},
          "notes":{"type":"string","nullable":true,"deprecated":true},
          "tags":{"type":"array","items":{"type":"string"},"uniqueItems":true}}}}},
      {"type":"function","function":{"name":"no_args"}}])");
  auto ok_tools = tools_of(api::chat_completions, real);
  ASSERT_EQ(ok_tools.size(), 1u);
  auto first = check_tool_schemas(ok_tools, cache);
  EXPECT_TRUE(first.has_value()) << first.err().message;
  const auto before = cache.snapshot();
  EXPECT_TRUE(check_tool_schemas(tools_of(api::chat_completions, real), cache).has_value());
  EXPECT_EQ(cache.snapshot().hits, before.hits + 1);
  EXPECT_EQ(cache.snapshot().misses, before.misses);
  EXPECT_TRUE(check_tool_schemas({}, cache).has_value());

  // The same limits as response schemas: the cache's.
  schema_options o;
  o.max_depth = 1;
  schema::schema_cache strict_cache(o.cache_options());
  auto deep = tools_of(api::chat_completions, chat_tools(R"([{"type":"function","function":{"name":"d",
      "parameters":{"type":"object","properties":{"a":{"type":"object","properties":{"b":{}}}}}}}])"));
  EXPECT_EQ(check_tool_schemas(deep, strict_cache).err().param, "tools[0].function.parameters/properties/a/properties/b");
}
