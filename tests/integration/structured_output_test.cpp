// Structured outputs through the gateway against the in-process simulator (x-sim-content makes the
// model's output exact): chat and responses, stream and whole, valid and invalid output, under each
// policy; schema compile errors and bad policy headers as 400s; one shared compiled-schema cache.
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>

#include "app/gateway.hpp"
#include "sim/server.hpp"
#include "test_client.hpp"

using namespace sluice;
using namespace std::chrono_literals;
using test::bhttp::verb;
using headers = std::vector<std::pair<std::string, std::string>>;

namespace {

const std::string kSchema =
    R"({"type":"object","properties":{"city":{"type":"string"},"n":{"type":"integer"}},"required":["city"],"additionalProperties":false})";
const std::string kValid = R"({"city":"Oslo","n":3})";
const std::string kInvalid = R"({"city":"Oslo","n":"three"})";

class StructuredOutputTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    sim::options so;
    so.listen = "127.0.0.1:0";
    so.threads = 2;
    so.tokens = 8;
    so.token_size = 5;
    sim_ = new sim::server(so);
    auto sp = sim_->start();
    ASSERT_TRUE(sp.has_value()) << sp.err().message;

    app::serve_options go;
    go.http.listen = "127.0.0.1:0";
    go.http.threads = 2;
    go.upstream.urls = {"http://127.0.0.1:" + std::to_string(sp->port())};
    // These tests are about one exchange each: no retries, and no circuit that the fault cases
    // (which share this gateway) could open. Retries and circuits: resilience_test.cpp.
    go.routing.max_attempts = 1;
    go.routing.circuit_failures = 1000000;
    go.routing.circuit_error_rate = 0;
    go.schema.retries = 2;  // the default, spelled out for the attempts assertions
    auto made = app::gateway::make(go, "sk-test-key");
    ASSERT_TRUE(made.has_value()) << made.err().message;
    gw_ = std::move(made).value().release();
    auto gp = gw_->start();
    ASSERT_TRUE(gp.has_value()) << gp.err().message;
    port_ = gp->port();
  }
  static void TearDownTestSuite() {
    delete gw_;
    delete sim_;
  }

  static std::string chat_body(bool stream, const std::string& schema = kSchema) {
    return std::string(R"({"model":"sim-1","messages":[{"role":"user","content":"a city"}],"stream":)") +
           (stream ? "true" : "false") +
           R"(,"response_format":{"type":"json_schema","json_schema":{"name":"city","strict":true,"schema":)" + schema +
           "}}}";
  }
  static std::string responses_body(bool stream, const std::string& schema = kSchema) {
    return std::string(R"({"model":"sim-1","input":"a city","stream":)") + (stream ? "true" : "false") +
           R"(,"text":{"format":{"type":"json_schema","name":"city","strict":true,"schema":)" + schema + "}}}";
  }
  static test::bhttp::response<test::bhttp::string_body> post(const std::string& path, const std::string& body,
                                                              headers h) {
    return test::call(port_, verb::post, path, body, std::move(h));
  }
  static std::string completions_body(bool stream, const std::string& extra = "") {
    return std::string(R"({"model":"sim-1","prompt":"a city","stream":)") + (stream ? "true" : "false") + extra +
           R"(,"response_format":{"type":"json_schema","json_schema":{"name":"city","strict":true,"schema":)" + kSchema +
           "}}}";
  }
  // A chat body asking for n choices.
  static std::string chat_n_body(bool stream, int n) {
    return std::string(R"({"model":"sim-1","n":)") + std::to_string(n) +
           R"(,"messages":[{"role":"user","content":"a city"}],"stream":)" + (stream ? "true" : "false") +
           R"(,"response_format":{"type":"json_schema","json_schema":{"name":"city","strict":true,"schema":)" + kSchema +
           "}}}";
  }
  // The simulator's script is one FIFO for every request it serves: each test that scripts starts
  // from an empty one and must leave it empty (nothing else may take its entries).
  static void script(const std::string& entries) {
    auto r = sim_->control(R"({"clear":true})");
    ASSERT_TRUE(r.has_value()) << r.err().message;
    ASSERT_EQ(sim_->script_remaining(), 0u);
    auto s = sim_->control(R"({"script":)" + entries + "}");
    ASSERT_TRUE(s.has_value()) << s.err().message;
  }
  static std::string json_string(const std::string& s) { return boost::json::serialize(boost::json::string(s)); }
  static headers with_content(const std::string& content, headers more = {}) {
    more.emplace_back("x-sim-content", content);
    return more;
  }

  static sim::server* sim_;
  static app::gateway* gw_;
  static std::uint16_t port_;
};

sim::server* StructuredOutputTest::sim_ = nullptr;
app::gateway* StructuredOutputTest::gw_ = nullptr;
std::uint16_t StructuredOutputTest::port_ = 0;

boost::json::value parse(const std::string& s) {
  boost::system::error_code ec;
  auto v = boost::json::parse(s, ec);
  EXPECT_FALSE(ec) << s;
  return v;
}

std::string header(const test::bhttp::response<test::bhttp::string_body>& res, std::string_view name) {
  auto it = res.find(name);
  return it == res.end() ? std::string() : std::string(it->value());
}

// The concatenated chat deltas of a relayed stream.
std::string chat_stream_text(const std::string& body) {
  std::string text;
  std::size_t pos = 0;
  while ((pos = body.find("data: {", pos)) != std::string::npos) {
    auto end = body.find('\n', pos);
    auto v = parse(body.substr(pos + 6, end - pos - 6));
    pos = end;
    if (!v.is_object() || !v.as_object().contains("choices")) continue;
    auto& ch = v.at("choices").as_array();
    if (ch.empty()) continue;
    if (auto* c = ch[0].at("delta").as_object().if_contains("content"); c && c->is_string()) text += c->as_string();
  }
  return text;
}

// The stream ended with an in-band error event and no [DONE]: its "error" object (null if none).
boost::json::value in_band_error(const std::string& body) {
  EXPECT_EQ(body.find("[DONE]"), std::string::npos) << body;
  auto err = body.find("data: {\"error\":");
  EXPECT_NE(err, std::string::npos) << body;
  if (err == std::string::npos) return nullptr;
  return parse(body.substr(err + 6, body.find('\n', err) - err - 6)).at("error");
}

}  // namespace

// --- whole answers ------------------------------------------------------------------------------

TEST_F(StructuredOutputTest, ChatWholeAnnotateValid) {
  auto res = post("/v1/chat/completions", chat_body(false), with_content(kValid));
  ASSERT_EQ(res.result_int(), 200u) << res.body();
  EXPECT_EQ(header(res, "x-sluice-schema"), "valid");
  EXPECT_EQ(parse(res.body()).at("choices").at(0).at("message").at("content").as_string(), kValid);
}

TEST_F(StructuredOutputTest, ChatWholeAnnotateInvalid) {
  auto res = post("/v1/chat/completions", chat_body(false), with_content(kInvalid));
  ASSERT_EQ(res.result_int(), 200u) << res.body();
  auto h = header(res, "x-sluice-schema");
  EXPECT_EQ(h.rfind("invalid; path=/n; ", 0), 0u) << h;
}

TEST_F(StructuredOutputTest, ResponsesWholeAnnotate) {
  auto ok = post("/v1/responses", responses_body(false), with_content(kValid));
  ASSERT_EQ(ok.result_int(), 200u) << ok.body();
  EXPECT_EQ(header(ok, "x-sluice-schema"), "valid");
  auto v = parse(ok.body());
  EXPECT_EQ(v.at("object"), "response");
  EXPECT_EQ(v.at("output").at(0).at("content").at(0).at("text").as_string(), kValid);

  auto bad = post("/v1/responses", responses_body(false), with_content(kInvalid));
  ASSERT_EQ(bad.result_int(), 200u);
  EXPECT_EQ(header(bad, "x-sluice-schema").rfind("invalid; path=/n; ", 0), 0u) << header(bad, "x-sluice-schema");
}

TEST_F(StructuredOutputTest, WholeRejectIs502SchemaViolation) {
  for (std::string path : {"/v1/chat/completions", "/v1/responses"}) {
    auto body = path == "/v1/responses" ? responses_body(false) : chat_body(false);
    auto res = post(path, body, with_content(kInvalid, {{"x-sluice-schema-policy", "reject"}}));
    ASSERT_EQ(res.result_int(), 502u) << res.body();
    auto e = parse(res.body()).at("error");
    EXPECT_EQ(e.at("code"), "schema_violation");
    EXPECT_EQ(e.at("param"), "/n");
    EXPECT_NE(std::string(e.at("message").as_string()).find("'/n'"), std::string::npos);

    auto ok = post(path, body, with_content(kValid, {{"x-sluice-schema-policy", "reject"}}));
    EXPECT_EQ(ok.result_int(), 200u) << path;
  }
}

TEST_F(StructuredOutputTest, WholeRetryAsksAgainAndCountsAttempts) {
  auto before = sim_->snapshot().requests;
  auto res = post("/v1/chat/completions", chat_body(false), with_content(kInvalid, {{"x-sluice-schema-policy", "retry"}}));
  EXPECT_EQ(res.result_int(), 502u) << res.body();
  EXPECT_EQ(header(res, "x-sluice-schema-attempts"), "3");  // 1 + schema-retries
  EXPECT_EQ(parse(res.body()).at("error").at("code"), "schema_violation");
  EXPECT_EQ(sim_->snapshot().requests - before, 3u);

  auto ok = post("/v1/responses", responses_body(false), with_content(kValid, {{"x-sluice-schema-policy", "retry"}}));
  EXPECT_EQ(ok.result_int(), 200u) << ok.body();
  EXPECT_EQ(header(ok, "x-sluice-schema-attempts"), "1");
}

TEST_F(StructuredOutputTest, WholeRetrySucceedsOnALaterAttempt) {
  // First answer breaks the schema (not JSON at all), the second conforms.
  script("[{\"content\":\"not json\"},{\"content\":" + json_string(kValid) + "}]");
  auto before = sim_->snapshot().completion_requests;
  auto res = post("/v1/chat/completions", chat_body(false), {{"x-sluice-schema-policy", "retry"}});
  ASSERT_EQ(res.result_int(), 200u) << res.body();
  EXPECT_EQ(header(res, "x-sluice-schema-attempts"), "2");
  EXPECT_EQ(parse(res.body()).at("choices").at(0).at("message").at("content").as_string(), kValid);
  EXPECT_EQ(sim_->snapshot().completion_requests - before, 2u);
  EXPECT_EQ(sim_->script_remaining(), 0u);

  // The same through the Responses API, succeeding on the third (last) attempt.
  script("[{\"content\":" + json_string(kInvalid) + "},{\"content\":\"{\\\"city\\\"\"},{\"content\":" +
         json_string(kValid) + "}]");
  auto r2 = post("/v1/responses", responses_body(false), {{"x-sluice-schema-policy", "retry"}});
  ASSERT_EQ(r2.result_int(), 200u) << r2.body();
  EXPECT_EQ(header(r2, "x-sluice-schema-attempts"), "3");
  EXPECT_EQ(parse(r2.body()).at("output").at(0).at("content").at(0).at("text").as_string(), kValid);
  EXPECT_EQ(sim_->script_remaining(), 0u);
}

TEST_F(StructuredOutputTest, WholeRetryEveryAttemptViolates) {
  // schema-retries 2: three attempts, each wrong in its own way; the last one's violation is reported.
  script("[{\"content\":\"not json\"},{\"content\":" + json_string(kInvalid) + "},{\"content\":\"{\\\"n\\\":1}\"}]");
  auto before = sim_->snapshot().completion_requests;
  auto res = post("/v1/chat/completions", chat_body(false), {{"x-sluice-schema-policy", "retry"}});
  ASSERT_EQ(res.result_int(), 502u) << res.body();
  EXPECT_EQ(header(res, "x-sluice-schema-attempts"), "3");  // schema-retries + 1
  auto e = parse(res.body()).at("error");
  EXPECT_EQ(e.at("type"), "upstream_error");
  EXPECT_EQ(e.at("code"), "schema_violation");
  EXPECT_TRUE(e.at("param").is_null()) << e;  // the root: required "city" is missing
  EXPECT_NE(std::string(e.at("message").as_string()).find("city"), std::string::npos) << e;
  EXPECT_EQ(sim_->snapshot().completion_requests - before, 3u);
  EXPECT_EQ(sim_->script_remaining(), 0u);
}

TEST_F(StructuredOutputTest, RetryPassesAnUpstreamErrorThrough) {
  auto res = post("/v1/chat/completions", chat_body(false),
                  with_content(kInvalid, {{"x-sluice-schema-policy", "retry"}, {"x-sim-status", "503"}}));
  EXPECT_EQ(res.result_int(), 503u) << res.body();
}

// --- streams ------------------------------------------------------------------------------------

TEST_F(StructuredOutputTest, ChatStreamAnnotateEventBeforeDone) {
  auto res = post("/v1/chat/completions", chat_body(true), with_content(kValid, {{"x-sluice-schema-events", "1"}}));
  ASSERT_EQ(res.result_int(), 200u);
  const auto& b = res.body();
  EXPECT_EQ(chat_stream_text(b), kValid);
  auto ev = b.find("event: sluice.schema\ndata: {\"valid\":true}\n\n");
  ASSERT_NE(ev, std::string::npos) << b;
  EXPECT_EQ(b.substr(ev + std::string("event: sluice.schema\ndata: {\"valid\":true}\n\n").size()), "data: [DONE]\n\n");

  auto bad = post("/v1/chat/completions", chat_body(true), with_content(kInvalid, {{"x-sluice-schema-events", "true"}}));
  auto pos = bad.body().find("event: sluice.schema\ndata: ");
  ASSERT_NE(pos, std::string::npos) << bad.body();
  auto line_end = bad.body().find('\n', pos + 21);
  auto v = parse(bad.body().substr(pos + 27, line_end - pos - 27));
  EXPECT_EQ(v.at("valid"), false);
  EXPECT_EQ(v.at("instance_path"), "/n");
  EXPECT_EQ(v.at("schema_path"), "/properties/n/type");
  EXPECT_NE(bad.body().find("data: [DONE]\n\n"), std::string::npos);
}

TEST_F(StructuredOutputTest, ChatStreamAnnotateWithoutOptInIsUntouched) {
  auto res = post("/v1/chat/completions", chat_body(true), with_content(kInvalid));
  ASSERT_EQ(res.result_int(), 200u);
  EXPECT_EQ(res.body().find("sluice.schema"), std::string::npos);
  EXPECT_EQ(chat_stream_text(res.body()), kInvalid);
  EXPECT_NE(res.body().find("data: [DONE]\n\n"), std::string::npos);
}

TEST_F(StructuredOutputTest, ChatStreamRejectStopsAtFirstViolationAndAbortsUpstream) {
  // The violation ("n" is a string) comes early; the padding after it streams slowly, so the
  // upstream is still sending when the gateway cancels it.
  std::string content = R"({"n":"x","city":")" + std::string(400, 'a') + "\"}";
  auto aborted_before = sim_->snapshot().streams_aborted;
  for (std::string policy : {"reject", "retry"}) {  // retry acts as reject on streams
    auto res = post("/v1/chat/completions", chat_body(true),
                    with_content(content, {{"x-sluice-schema-policy", policy}, {"x-sim-token-delay", "5ms"}}));
    ASSERT_EQ(res.result_int(), 200u);
    const auto& b = res.body();
    auto e = in_band_error(b);
    ASSERT_TRUE(e.is_object());
    EXPECT_EQ(e.at("code"), "schema_violation");
    EXPECT_EQ(e.at("param"), "/n");
    EXPECT_LT(chat_stream_text(b).size(), 20u) << "relayed past the violation";
  }
  EXPECT_LT(test::wait_until([&] { return sim_->snapshot().streams_aborted >= aborted_before + 2; }),
            std::chrono::milliseconds(5000));
}

TEST_F(StructuredOutputTest, ResponsesStreamEndsWithCompletedThenVerdict) {
  auto res = post("/v1/responses", responses_body(true), with_content(kValid, {{"x-sluice-schema-events", "1"}}));
  ASSERT_EQ(res.result_int(), 200u);
  const auto& b = res.body();
  EXPECT_EQ(b.find("[DONE]"), std::string::npos);
  for (const char* type : {"response.created", "response.in_progress", "response.output_item.added",
                           "response.content_part.added", "response.output_text.delta", "response.output_text.done",
                           "response.content_part.done", "response.output_item.done", "response.completed"})
    EXPECT_NE(b.find(std::string("event: ") + type + "\n"), std::string::npos) << type;
  const std::string verdict = "event: sluice.schema\ndata: {\"valid\":true}\n\n";
  ASSERT_GE(b.size(), verdict.size());
  EXPECT_EQ(b.substr(b.size() - verdict.size()), verdict);  // the last event, after response.completed
  EXPECT_LT(b.find("event: response.completed"), b.find("event: sluice.schema"));
}

TEST_F(StructuredOutputTest, ResponsesStreamWithoutSchemaRelaysCleanly) {
  auto res = post("/v1/responses", R"({"model":"sim-1","input":"hello","stream":true})", {});
  ASSERT_EQ(res.result_int(), 200u);
  EXPECT_NE(res.body().find("event: response.completed"), std::string::npos);
  EXPECT_EQ(res.body().find("data: {\"error\""), std::string::npos) << res.body();
  EXPECT_EQ(res.body().find("[DONE]"), std::string::npos);
}

TEST_F(StructuredOutputTest, ResponsesStreamReject) {
  auto res = post("/v1/responses", responses_body(true), with_content(kInvalid, {{"x-sluice-schema-policy", "reject"}}));
  ASSERT_EQ(res.result_int(), 200u);
  const auto& b = res.body();
  EXPECT_NE(b.find("\"code\":\"schema_violation\""), std::string::npos) << b;
  EXPECT_EQ(b.find("response.completed"), std::string::npos);
  EXPECT_EQ(b.find("response.output_text.done"), std::string::npos);
}

TEST_F(StructuredOutputTest, ResponsesStreamRejectsAnIncompleteDocument) {
  auto res = post("/v1/responses", responses_body(true),
                  with_content(R"({"city":"Oslo")", {{"x-sluice-schema-policy", "reject"}}));
  EXPECT_NE(res.body().find("\"code\":\"schema_violation\""), std::string::npos) << res.body();
  EXPECT_EQ(res.body().find("event: response.completed"), std::string::npos);
}

// --- request errors -----------------------------------------------------------------------------

TEST_F(StructuredOutputTest, SchemaCompileErrorIs400WithParamBeforeUpstream) {
  auto before = sim_->snapshot().requests;
  auto bad_schema = R"({"type":"object","properties":{"a":{"type":"string","unevaluatedProperties":false}}})";
  auto res = post("/v1/chat/completions", chat_body(false, bad_schema), {});
  ASSERT_EQ(res.result_int(), 400u) << res.body();
  auto e = parse(res.body()).at("error");
  EXPECT_EQ(e.at("type"), "invalid_request_error");
  EXPECT_EQ(e.at("param"), "response_format.json_schema.schema/properties/a/unevaluatedProperties");
  EXPECT_NE(std::string(e.at("message").as_string()).find("unevaluatedProperties"), std::string::npos);

  auto r2 = post("/v1/responses", responses_body(true, bad_schema), {});
  ASSERT_EQ(r2.result_int(), 400u) << r2.body();
  EXPECT_EQ(parse(r2.body()).at("error").at("param"), "text.format.schema/properties/a/unevaluatedProperties");

  // A hostile schema (a $ref cycle) is refused the same way.
  auto r3 = post("/v1/chat/completions", chat_body(false, R"({"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"})"), {});
  EXPECT_EQ(r3.result_int(), 400u) << r3.body();
  EXPECT_EQ(sim_->snapshot().requests, before);  // nothing reached the upstream
}

TEST_F(StructuredOutputTest, BadPolicyHeaderIs400) {
  auto res = post("/v1/chat/completions", chat_body(false), {{"x-sluice-schema-policy", "sometimes"}});
  ASSERT_EQ(res.result_int(), 400u) << res.body();
  EXPECT_EQ(parse(res.body()).at("error").at("param"), "x-sluice-schema-policy");
}

TEST_F(StructuredOutputTest, ResponsesRequestValidation) {
  auto res = post("/v1/responses", R"({"model":"sim-1","input":5})", {});
  ASSERT_EQ(res.result_int(), 400u);
  EXPECT_EQ(parse(res.body()).at("error").at("param"), "input");
  auto r2 = post("/v1/responses", R"({"input":"x"})", {});
  EXPECT_EQ(r2.result_int(), 400u);
}

TEST_F(StructuredOutputTest, OneSharedCacheCompilesASchemaOnce) {
  // A schema no other test uses; two requests (different threads may serve them) -> one compile.
  std::string schema = R"({"type":"object","title":"cache-probe","properties":{"city":{"type":"string"}}})";
  auto s0 = gw_->schema_cache_stats();
  auto a = post("/v1/chat/completions", chat_body(false, schema), with_content(kValid));
  auto b = post("/v1/responses", responses_body(true, schema), with_content(kValid));
  EXPECT_EQ(a.result_int(), 200u);
  EXPECT_EQ(b.result_int(), 200u);
  auto s1 = gw_->schema_cache_stats();
  EXPECT_EQ(s1.compiles - s0.compiles, 1u);
  EXPECT_GE(s1.hits - s0.hits, 1u);
  EXPECT_GE(s1.entries, 1u);
}

// --- n > 1: every choice is checked --------------------------------------------------------------

TEST_F(StructuredOutputTest, WholeAnswerChecksEveryChoice) {
  // Choice 1 breaks the schema: reject names it.
  script("[{\"content\":[" + json_string(kValid) + "," + json_string(kInvalid) + "]}]");
  auto res = post("/v1/chat/completions", chat_n_body(false, 2), {{"x-sluice-schema-policy", "reject"}});
  ASSERT_EQ(res.result_int(), 502u) << res.body();
  auto e = parse(res.body()).at("error");
  EXPECT_EQ(e.at("code"), "schema_violation");
  EXPECT_EQ(e.at("param"), "/n");
  EXPECT_NE(std::string(e.at("message").as_string()).find("choice 1"), std::string::npos) << e;

  // annotate: the header names it, the answer carries both choices.
  script("[{\"content\":[" + json_string(kValid) + "," + json_string(kInvalid) + "," + json_string(kValid) + "]}]");
  auto ann = post("/v1/chat/completions", chat_n_body(false, 3), {});
  ASSERT_EQ(ann.result_int(), 200u) << ann.body();
  EXPECT_EQ(header(ann, "x-sluice-schema").rfind("invalid; choice=1; path=/n; ", 0), 0u) << header(ann, "x-sluice-schema");
  EXPECT_EQ(parse(ann.body()).at("choices").as_array().size(), 3u);

  // Every choice conforms.
  auto ok = post("/v1/chat/completions", chat_n_body(false, 2), with_content(kValid, {{"x-sluice-schema-policy", "reject"}}));
  ASSERT_EQ(ok.result_int(), 200u) << ok.body();
  auto v = parse(ok.body());
  ASSERT_EQ(v.at("choices").as_array().size(), 2u);
  EXPECT_EQ(v.at("choices").at(1).at("message").at("content").as_string(), kValid);

  // retry re-asks when any choice fails.
  script("[{\"content\":[" + json_string(kValid) + "," + json_string(kInvalid) + "]},{\"content\":" +
         json_string(kValid) + "}]");
  auto retried = post("/v1/chat/completions", chat_n_body(false, 2), {{"x-sluice-schema-policy", "retry"}});
  ASSERT_EQ(retried.result_int(), 200u) << retried.body();
  EXPECT_EQ(header(retried, "x-sluice-schema-attempts"), "2");
  EXPECT_EQ(sim_->script_remaining(), 0u);
}

TEST_F(StructuredOutputTest, StreamChecksEveryChoice) {
  // Choice 1 breaks the schema mid-stream: the in-band error names it, no [DONE].
  script("[{\"content\":[" + json_string(kValid) + "," + json_string(kInvalid) + "]}]");
  auto res = post("/v1/chat/completions", chat_n_body(true, 2), {{"x-sluice-schema-policy", "reject"}});
  ASSERT_EQ(res.result_int(), 200u);
  const auto& b = res.body();
  auto e = in_band_error(b);
  ASSERT_TRUE(e.is_object());
  EXPECT_EQ(e.at("code"), "schema_violation");
  EXPECT_EQ(e.at("param"), "/n");
  EXPECT_NE(std::string(e.at("message").as_string()).find("choice 1"), std::string::npos) << e;
  EXPECT_NE(b.find("\"index\":1"), std::string::npos) << "the simulator interleaves both choices";

  // Both conform: the opted-in verdict event says so, before [DONE].
  auto ok = post("/v1/chat/completions", chat_n_body(true, 3), with_content(kValid, {{"x-sluice-schema-events", "1"}}));
  ASSERT_EQ(ok.result_int(), 200u);
  const std::string verdict = "event: sluice.schema\ndata: {\"valid\":true}\n\ndata: [DONE]\n\n";
  ASSERT_GE(ok.body().size(), verdict.size());
  EXPECT_EQ(ok.body().substr(ok.body().size() - verdict.size()), verdict) << ok.body();
  EXPECT_EQ(sim_->script_remaining(), 0u);
}

TEST_F(StructuredOutputTest, TooManyChoicesIs400BeforeUpstream) {
  auto before = sim_->snapshot().requests;
  auto res = post("/v1/chat/completions", chat_n_body(false, 17), {});
  ASSERT_EQ(res.result_int(), 400u) << res.body();
  auto e = parse(res.body()).at("error");
  EXPECT_EQ(e.at("type"), "invalid_request_error");
  EXPECT_EQ(e.at("param"), "n");
  EXPECT_EQ(sim_->snapshot().requests, before);
  // Without a schema n is the upstream's business.
  auto plain = post("/v1/chat/completions", R"({"model":"sim-1","n":17,"messages":[{"role":"user","content":"x"}]})", {});
  EXPECT_EQ(plain.result_int(), 200u) << plain.body();
}

// --- legacy /v1/completions: choices[i].text is checked -----------------------------------------

TEST_F(StructuredOutputTest, LegacyCompletionsAreChecked) {
  auto bad = post("/v1/completions", completions_body(false), with_content(kInvalid, {{"x-sluice-schema-policy", "reject"}}));
  ASSERT_EQ(bad.result_int(), 502u) << bad.body();
  EXPECT_EQ(parse(bad.body()).at("error").at("code"), "schema_violation");

  auto ok = post("/v1/completions", completions_body(false), with_content(kValid));
  ASSERT_EQ(ok.result_int(), 200u) << ok.body();
  EXPECT_EQ(header(ok, "x-sluice-schema"), "valid");
  EXPECT_EQ(parse(ok.body()).at("choices").at(0).at("text").as_string(), kValid);

  auto stream = post("/v1/completions", completions_body(true), with_content(kInvalid, {{"x-sluice-schema-policy", "reject"}}));
  ASSERT_EQ(stream.result_int(), 200u);
  EXPECT_NE(stream.body().find("\"code\":\"schema_violation\""), std::string::npos) << stream.body();
  EXPECT_EQ(stream.body().find("[DONE]"), std::string::npos);

  auto stream_ok = post("/v1/completions", completions_body(true), with_content(kValid, {{"x-sluice-schema-events", "1"}}));
  ASSERT_EQ(stream_ok.result_int(), 200u);
  EXPECT_NE(stream_ok.body().find("event: sluice.schema\ndata: {\"valid\":true}\n\ndata: [DONE]"), std::string::npos)
      << stream_ok.body();

  // echo would put the prompt in front of the document: refused before anything goes upstream.
  auto before = sim_->snapshot().requests;
  auto echo = post("/v1/completions", completions_body(false, R"(,"echo":true)"), {});
  ASSERT_EQ(echo.result_int(), 400u) << echo.body();
  EXPECT_EQ(parse(echo.body()).at("error").at("param"), "echo");
  EXPECT_EQ(sim_->snapshot().requests, before);
}
