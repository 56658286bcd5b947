// The Responses API and whole answers fully accounted, and the answers the official SDKs act on:
// tokens of Responses streams (from response.completed's usage), of whole chat and Responses
// answers; time to first token and inter-token gaps for Responses deltas; streamed schema
// violations never counted against the upstream (eight in a row leave it serving and /readyz
// 200); x-should-retry on every error; a broken Responses stream ends with the Responses `error`
// event, its sequence_number continuing the upstream's. Real sockets, the in-process simulator.
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

#include "boxes.hpp"
#include "test_client.hpp"

using namespace sluice;
using test::bhttp::verb;
using headers = std::vector<std::pair<std::string, std::string>>;

namespace {

constexpr std::uint64_t kTokens = 8;
const std::string kSchema =
    R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false})";

double metric(std::uint16_t port, const std::string& series) {
  const std::string text = test::call(port, verb::get, "/metrics").body();
  const auto pos = text.find("\n" + series + " ");
  if (pos == std::string::npos) return 0;
  return std::stod(text.substr(pos + series.size() + 2));
}
double completion_tokens(std::uint16_t port) { return metric(port, R"(sluice_tokens_total{direction="completion"})"); }
double prompt_tokens(std::uint16_t port) { return metric(port, R"(sluice_tokens_total{direction="prompt"})"); }

std::string header(const test::bhttp::response<test::bhttp::string_body>& r, const char* name) {
  auto it = r.find(name);
  return it == r.end() ? std::string() : std::string(it->value());
}

// The events of an SSE body: (event name, data).
std::vector<std::pair<std::string, std::string>> events_of(const std::string& body) {
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t at = 0;
  while (at < body.size()) {
    auto end = body.find("\n\n", at);
    if (end == std::string::npos) end = body.size();
    std::string name, data;
    std::size_t line = at;
    while (line < end) {
      auto nl = body.find('\n', line);
      if (nl == std::string::npos || nl > end) nl = end;
      std::string_view l(body.data() + line, nl - line);
      if (l.rfind("event: ", 0) == 0) name = l.substr(7);
      if (l.rfind("data: ", 0) == 0) data = l.substr(6);
      line = nl + 1;
    }
    if (!data.empty()) out.emplace_back(name, data);
    at = end + 2;
  }
  return out;
}

class AccountingTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    sim::options so;
    so.listen = "127.0.0.1:0";
    so.threads = 1;
    so.tokens = kTokens;
    so.token_size = 4;
    sim_ = new test::sim_box(so);
    app::serve_options go;
    go.http.listen = "127.0.0.1:0";
    go.http.threads = 2;
    go.upstream.urls = {sim_->url()};
    go.routing.max_attempts = 1;  // the default circuit (5 failures) stays: it is what is tested
    gw_ = new test::gateway_box(go);
  }
  static void TearDownTestSuite() {
    delete gw_;
    delete sim_;
  }
  static std::uint16_t port() { return gw_->port; }
  static test::bhttp::response<test::bhttp::string_body> post(const std::string& path, const std::string& body,
                                                              headers h = {}) {
    return test::call(port(), verb::post, path, body, std::move(h));
  }
  static std::string responses_body(bool stream, const std::string& extra = "") {
    return std::string(R"({"model":"sim-1","input":"hello","stream":)") + (stream ? "true" : "false") + extra + "}";
  }
  // The counters move in finish(), after the last byte is written: wait for them.
  static void wait_for_tokens(double at_least) {
    test::wait_until([&] { return completion_tokens(port()) >= at_least; });
  }

  static test::sim_box* sim_;
  static test::gateway_box* gw_;
};
test::sim_box* AccountingTest::sim_ = nullptr;
test::gateway_box* AccountingTest::gw_ = nullptr;

TEST_F(AccountingTest, ResponsesStreamsCountTheirTokensAndTiming) {
  const double out0 = completion_tokens(port()), in0 = prompt_tokens(port());
  const double ttft0 = metric(port(), "sluice_time_to_first_token_seconds_count");
  const double gaps0 = metric(port(), "sluice_inter_token_seconds_count");
  auto res = post("/v1/responses", responses_body(true));
  ASSERT_EQ(res.result_int(), 200u) << res.body();
  ASSERT_NE(res.body().find("response.completed"), std::string::npos);
  wait_for_tokens(out0 + kTokens);
  EXPECT_EQ(completion_tokens(port()) - out0, static_cast<double>(kTokens)) << "response.completed.response.usage";
  EXPECT_GT(prompt_tokens(port()) - in0, 0) << "input_tokens";
  EXPECT_EQ(metric(port(), "sluice_time_to_first_token_seconds_count") - ttft0, 1);
  EXPECT_EQ(metric(port(), "sluice_inter_token_seconds_count") - gaps0, static_cast<double>(kTokens - 1))
      << "one gap between each two output_text deltas";
}

TEST_F(AccountingTest, WholeAnswersCountTheirTokens) {
  for (const auto& [path, body] : {std::pair<std::string, std::string>{"/v1/responses", responses_body(false)},
                                   {"/v1/chat/completions", test::chat_body(false)}}) {
    SCOPED_TRACE(path);
    const double out0 = completion_tokens(port()), in0 = prompt_tokens(port());
    auto res = post(path, body);
    ASSERT_EQ(res.result_int(), 200u) << res.body();
    wait_for_tokens(out0 + kTokens);
    EXPECT_EQ(completion_tokens(port()) - out0, static_cast<double>(kTokens));
    EXPECT_GT(prompt_tokens(port()) - in0, 0);
  }
}

TEST_F(AccountingTest, StreamedSchemaRejectsNeverOpenTheCircuit) {
  const std::string body =
      std::string(R"({"model":"sim-1","messages":[{"role":"user","content":"a city"}],"stream":true,)") +
      R"("response_format":{"type":"json_schema","json_schema":{"name":"city","strict":true,"schema":)" + kSchema +
      "}}}";
  const double opens0 = metric(port(), R"(sluice_upstream_circuit_opens_total{upstream="upstream-0"})");
  for (int i = 0; i < 8; ++i) {
    auto res = post("/v1/chat/completions", body,
                    {{"x-sluice-schema-policy", "reject"}, {"x-sim-content", R"({"town":"Oslo"})"}});
    ASSERT_EQ(res.result_int(), 200u) << i << ": " << res.body();  // the head went out before the verdict
    EXPECT_NE(res.body().find("schema_violation"), std::string::npos) << res.body();
    EXPECT_EQ(res.body().find("[DONE]"), std::string::npos);
  }
  auto plain = post("/v1/chat/completions", test::chat_body(false));
  EXPECT_EQ(plain.result_int(), 200u) << plain.body();
  auto ready = test::call(port(), verb::get, "/readyz");
  EXPECT_EQ(ready.result_int(), 200u) << ready.body();
  EXPECT_EQ(metric(port(), R"(sluice_upstream_circuit_opens_total{upstream="upstream-0"})"), opens0);
}

TEST_F(AccountingTest, EveryErrorSaysWhetherARetryCanHelp) {
  struct expect {
    const char* what;
    std::string path, body;
    headers h;
    unsigned status;
    const char* should_retry;
  };
  const std::string schema_whole =
      std::string(R"({"model":"sim-1","messages":[{"role":"user","content":"a city"}],)") +
      R"("response_format":{"type":"json_schema","json_schema":{"name":"city","strict":true,"schema":)" + kSchema +
      "}}}";
  const std::vector<expect> cases = {
      {"malformed JSON", "/v1/chat/completions", "{", {}, 400, "false"},
      {"unknown route", "/v1/nothing", test::chat_body(false), {}, 404, "false"},
      {"schema violation under reject", "/v1/chat/completions", schema_whole,
       {{"x-sluice-schema-policy", "reject"}, {"x-sim-content", R"({"town":"Oslo"})"}}, 502, "false"},
      {"upstream 400", "/v1/chat/completions", test::chat_body(false), {{"x-sim-status", "400"}}, 400, "false"},
      {"upstream 500", "/v1/chat/completions", test::chat_body(false), {{"x-sim-status", "500"}}, 500, "true"},
      {"upstream 429", "/v1/chat/completions", test::chat_body(false), {{"x-sim-fault", "429"}}, 429, "true"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    auto res = post(c.path, c.body, c.h);
    EXPECT_EQ(res.result_int(), c.status) << res.body();
    EXPECT_EQ(header(res, "x-should-retry"), c.should_retry);
  }
  // The successes carry none.
  auto ok = post("/v1/chat/completions", test::chat_body(false));
  EXPECT_EQ(header(ok, "x-should-retry"), "");
}

TEST_F(AccountingTest, ABrokenResponsesStreamEndsWithTheResponsesErrorEvent) {
  auto res = post("/v1/responses", responses_body(true), {{"x-sim-fault", "malformed"}, {"x-sim-fault-after", "3"}});
  ASSERT_EQ(res.result_int(), 200u) << res.body();
  const auto evs = events_of(res.body());
  ASSERT_GE(evs.size(), 2u) << res.body();
  std::int64_t last_seq = -1;
  for (std::size_t i = 0; i + 1 < evs.size(); ++i) {
    boost::system::error_code ec;
    auto v = boost::json::parse(evs[i].second, ec);
    ASSERT_FALSE(ec) << evs[i].second;
    last_seq = v.as_object().at("sequence_number").to_number<std::int64_t>();
  }
  ASSERT_GE(last_seq, 3) << "the upstream's events came first";
  const auto& [name, data] = evs.back();
  EXPECT_EQ(name, "error");
  auto v = boost::json::parse(data).as_object();
  EXPECT_EQ(v.at("type").as_string(), "error");
  EXPECT_EQ(v.at("sequence_number").to_number<std::int64_t>(), last_seq + 1);
  EXPECT_EQ(v.at("code").as_string(), "upstream_protocol_error");
  EXPECT_FALSE(v.at("message").as_string().empty());
  // The nested error object is what the official SDKs raise on.
  EXPECT_EQ(v.at("error").as_object().at("code").as_string(), "upstream_protocol_error");
  EXPECT_EQ(res.body().find("[DONE]"), std::string::npos);
  EXPECT_EQ(res.body().find("response.completed"), std::string::npos);
}

}  // namespace
