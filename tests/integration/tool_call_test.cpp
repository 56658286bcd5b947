// Tool-call answers through the gateway: the simulator's tool calls (chat tool_calls, Responses
// function_call items; streamed and whole) pass through byte-identical to what the simulator sends
// directly (a recorded Responses stream but for the response id the gateway gives it), their usage is counted in sluice_tokens_total, and a schema policy does not judge them
// (a tool call is not a text answer: "skipped; tool_calls").
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/stream_parser.hpp>

#include <cstdlib>

#include "app/gateway.hpp"
#include "sim/server.hpp"
#include "responses_events.hpp"
#include "test_client.hpp"

using namespace sluice;
using test::bhttp::verb;
using headers = std::vector<std::pair<std::string, std::string>>;

namespace {

const std::string kArgs = R"({"city":"Oslo","unit":"C"})";
const std::string kChatTools =
    R"(,"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}],"tool_choice":"required")";
const std::string kResponsesTools =
    R"(,"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}],"tool_choice":"required")";
const std::string kChatSchema =
    R"(,"response_format":{"type":"json_schema","json_schema":{"name":"n","strict":true,"schema":{"type":"integer"}}})";
const std::string kResponsesSchema = R"(,"text":{"format":{"type":"json_schema","name":"n","strict":true,"schema":{"type":"integer"}}})";

std::string chat(bool stream, const std::string& extra = "") {
  // A stream asks for usage itself, so the gateway forwards the body as it is (it adds
  // include_usage to a stream that does not) and the simulator answers exactly as it would directly.
  return std::string(R"({"model":"sim-1","messages":[{"role":"user","content":"weather?"}],"stream":)") +
         (stream ? R"(true,"stream_options":{"include_usage":true})" : "false") + kChatTools + extra + "}";
}
std::string responses(bool stream, const std::string& extra = "") {
  return std::string(R"({"model":"sim-1","input":"weather?","stream":)") + (stream ? "true" : "false") +
         kResponsesTools + extra + "}";
}

class ToolCallTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    sim::options so;
    so.listen = "127.0.0.1:0";
    so.threads = 2;
    so.token_size = 5;
    sim_ = new sim::server(so);
    auto sp = sim_->start();
    ASSERT_TRUE(sp.has_value()) << sp.err().message;
    sim_port_ = sp->port();

    app::serve_options go;
    go.http.listen = "127.0.0.1:0";
    go.http.threads = 2;
    go.upstream.urls = {"http://127.0.0.1:" + std::to_string(sim_port_)};
    go.routing.max_attempts = 1;
    auto made = app::gateway::make(go, "sk-test-key");
    ASSERT_TRUE(made.has_value()) << made.err().message;
    gw_ = std::move(made).value().release();
    auto gp = gw_->start();
    ASSERT_TRUE(gp.has_value()) << gp.err().message;
    gw_port_ = gp->port();
  }
  static void TearDownTestSuite() {
    delete gw_;
    delete sim_;
  }
  static test::bhttp::response<test::bhttp::string_body> post(std::uint16_t port, const std::string& path,
                                                              const std::string& body, headers h = {}) {
    h.emplace_back("x-sim-content", kArgs);
    return test::call(port, verb::post, path, body, std::move(h));
  }
  static std::string header(const test::bhttp::response<test::bhttp::string_body>& res, std::string_view name) {
    auto it = res.find(name);
    return it == res.end() ? std::string() : std::string(it->value());
  }
  // sluice_tokens_total{direction=...} from the gateway's /metrics.
  static double tokens(const std::string& direction) {
    const std::string m = test::call(gw_port_, verb::get, "/metrics").body();
    const std::string key = "sluice_tokens_total{direction=\"" + direction + "\"} ";
    auto pos = m.find(key);
    return pos == std::string::npos ? -1 : std::strtod(m.c_str() + pos + key.size(), nullptr);
  }

  static sim::server* sim_;
  static app::gateway* gw_;
  static std::uint16_t sim_port_, gw_port_;
};

sim::server* ToolCallTest::sim_ = nullptr;
app::gateway* ToolCallTest::gw_ = nullptr;
std::uint16_t ToolCallTest::sim_port_ = 0;
std::uint16_t ToolCallTest::gw_port_ = 0;

// The usage object of an answer: the whole body's, or a stream's last usage (chat usage chunk,
// Responses response.completed).
boost::json::object usage_of(const std::string& body, bool stream) {
  if (!stream) return boost::json::parse(body).at("usage").as_object();
  auto pos = body.rfind("\"usage\":{");
  EXPECT_NE(pos, std::string::npos) << body;
  boost::json::stream_parser p;
  boost::system::error_code ec;
  p.write_some(body.data() + pos + 8, body.size() - pos - 8, ec);  // stops after the object
  return p.release().as_object();
}

}  // namespace

TEST_F(ToolCallTest, PassThroughByteIdenticalAndCounted) {
  struct tcase {
    std::string path, body;
    bool stream;
    std::string marker;  // what shows it is a tool call
  };
  const std::vector<tcase> cases{
      {"/v1/chat/completions", chat(true), true, R"("finish_reason":"tool_calls")"},
      {"/v1/chat/completions", chat(false), false, R"("finish_reason":"tool_calls")"},
      {"/v1/responses", responses(true), true, "event: response.function_call_arguments.delta\n"},
      {"/v1/responses", responses(false), false, R"("type":"function_call")"},
  };
  for (const auto& tc : cases) {
    SCOPED_TRACE(tc.path + (tc.stream ? " stream" : " whole"));
    auto direct = post(sim_port_, tc.path, tc.body);
    auto again = post(sim_port_, tc.path, tc.body);
    ASSERT_EQ(direct.result_int(), 200u) << direct.body();
    ASSERT_EQ(direct.body(), again.body()) << "the simulator is deterministic for one request";
    ASSERT_NE(direct.body().find(tc.marker), std::string::npos) << direct.body();

    const double prompt_before = tokens("prompt"), completion_before = tokens("completion");
    auto via = post(gw_port_, tc.path, tc.body);
    ASSERT_EQ(via.result_int(), 200u) << via.body();
    if (tc.path == "/v1/responses" && tc.stream) {
      // Recorded for resumption under an id of the gateway's: every other byte is the upstream's.
      const std::string upstream_id(test::parse_events(direct.body()).front().data.at("response").at("id").as_string());
      EXPECT_EQ(test::with_upstream_id(via.body(), upstream_id), direct.body());
      EXPECT_EQ(via.body().find("\"" + upstream_id + "\""), std::string::npos) << "the upstream's id is not shown";
    } else {
      EXPECT_EQ(via.body(), direct.body());
    }

    // Counted, streamed and whole, chat and Responses: sluice_tokens_total moves by the usage the
    // upstream reported (a Responses stream's sits in response.completed's response.usage).
    const bool chat = tc.path == "/v1/chat/completions";
    auto usage = usage_of(direct.body(), tc.stream);
    const auto completion = usage.at(chat ? "completion_tokens" : "output_tokens").to_number<double>();
    const auto prompt = usage.at(chat ? "prompt_tokens" : "input_tokens").to_number<double>();
    EXPECT_EQ(completion, 6);  // 26 bytes of arguments in 5-byte tokens
    EXPECT_LT(test::wait_until([&] { return tokens("completion") >= completion_before + completion; }),
              std::chrono::milliseconds(5000));
    EXPECT_EQ(tokens("completion"), completion_before + completion);
    EXPECT_EQ(tokens("prompt"), prompt_before + prompt);
  }
}

TEST_F(ToolCallTest, SchemaPolicyDoesNotJudgeToolCallsWhole) {
  for (std::string policy : {"reject", "retry", "annotate"}) {
    SCOPED_TRACE(policy);
    auto c = post(gw_port_, "/v1/chat/completions", chat(false, kChatSchema), {{"x-sluice-schema-policy", policy}});
    ASSERT_EQ(c.result_int(), 200u) << c.body();
    EXPECT_EQ(c.body(), post(sim_port_, "/v1/chat/completions", chat(false, kChatSchema)).body());
    auto r = post(gw_port_, "/v1/responses", responses(false, kResponsesSchema), {{"x-sluice-schema-policy", policy}});
    ASSERT_EQ(r.result_int(), 200u) << r.body();
    if (policy == "annotate") {
      EXPECT_EQ(header(c, "x-sluice-schema"), "skipped; tool_calls");
      EXPECT_EQ(header(r, "x-sluice-schema"), "skipped; tool_calls");
    }
    if (policy == "retry") {
      EXPECT_EQ(header(c, "x-sluice-schema-attempts"), "1");  // not asked again
    }
  }
}

TEST_F(ToolCallTest, SchemaPolicyDoesNotJudgeToolCallsStreamed) {
  for (std::string policy : {"reject", "annotate"}) {
    SCOPED_TRACE(policy);
    headers h{{"x-sluice-schema-policy", policy}, {"x-sluice-schema-events", "1"}};
    auto c = post(gw_port_, "/v1/chat/completions", chat(true, kChatSchema), h);
    ASSERT_EQ(c.result_int(), 200u);
    EXPECT_EQ(c.body().find("schema_violation"), std::string::npos) << c.body();
    EXPECT_NE(c.body().find(R"("finish_reason":"tool_calls")"), std::string::npos);
    EXPECT_NE(c.body().find("data: [DONE]\n\n"), std::string::npos);
    auto r = post(gw_port_, "/v1/responses", responses(true, kResponsesSchema), h);
    ASSERT_EQ(r.result_int(), 200u);
    EXPECT_EQ(r.body().find("schema_violation"), std::string::npos) << r.body();
    EXPECT_NE(r.body().find("event: response.completed\n"), std::string::npos);
    if (policy == "annotate") {
      const std::string verdict = "event: sluice.schema\ndata: {\"valid\":true,\"skipped\":\"tool_calls\"}\n\n";
      EXPECT_NE(c.body().find(verdict), std::string::npos) << c.body();
      EXPECT_NE(r.body().find(verdict), std::string::npos) << r.body();
    }
  }
  // A text answer under the same schema is still judged.
  auto text = test::call(gw_port_, verb::post, "/v1/chat/completions",
                         R"({"model":"sim-1","messages":[{"role":"user","content":"n"}])" + kChatSchema + "}",
                         {{"x-sim-content", "\"x\""}, {"x-sluice-schema-policy", "reject"}});
  EXPECT_EQ(text.result_int(), 502u) << text.body();
}
