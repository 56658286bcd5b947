// Traces through the real gateway (docs/operations.md, "Traces"): a client's W3C trace continues
// through sluice to the upstream with a span of its own per attempt, so a retry shows as a second
// sibling; the spans reach an OTLP/HTTP collector (a recording listener here) with the GenAI
// attributes; the request's log line carries the trace and span ids; without a traceparent sluice
// starts a trace and samples it by ratio, and a failed request is exported whatever the ratio.
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <boost/json.hpp>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "boxes.hpp"
#include "otlp_collector.hpp"
#include "recording_upstream.hpp"
#include "test_client.hpp"

using namespace sluice;
using namespace std::chrono_literals;
using test::recording_upstream;
using test::collector;
using test::attribute;
namespace json = boost::json;

namespace {

constexpr const char* client_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
constexpr const char* client_span = "00f067aa0ba902b7";

const std::string whole_answer =
    R"({"id": "chatcmpl-up1", "object": "chat.completion", "model": "gpt-4o-mini-2024-07-18",)"
    R"( "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],)"
    R"( "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12}})";

app::serve_options traced(const std::string& upstream, const std::string& collector_url, double ratio = 1.0) {
  app::serve_options o;
  o.http.listen = "127.0.0.1:0";
  o.http.threads = 1;
  routing::upstream_spec s;
  s.name = "up";
  s.url = upstream;
  o.routing.upstreams.push_back(s);
  o.routing.max_attempts = 2;
  o.routing.backoff_base = 1ms;
  o.routing.backoff_cap = 2ms;
  o.trace.endpoint = collector_url;
  o.trace.export_interval = 20ms;
  o.trace.sample_ratio = ratio;
  return o;
}

std::string traceparent_of(const recording_upstream::seen& r) { return r.header("traceparent"); }

}  // namespace

TEST(Traces, AClientsTraceContinuesThroughARetryAndItsSpansReachTheCollector) {
  std::atomic<int> calls{0};
  recording_upstream up([&calls](const recording_upstream::seen&) {
    return ++calls == 1 ? recording_upstream::response(503, R"({"error":{"message":"busy"}})")
                        : recording_upstream::response(200, whole_answer);
  });
  collector col;
  std::ostringstream log_text;
  ASSERT_TRUE(obs::init_logging(obs::log_options{"info", "json"}, std::make_shared<spdlog::sinks::ostream_sink_mt>(log_text)));
  {
    test::gateway_box g(traced(up.url(), col.listener.url()));
    auto r = test::post_chat(g.port, false,
                             {{"traceparent", std::string("00-") + client_trace + "-" + client_span + "-01"},
                              {"tracestate", "vendor=opaque"}});
    ASSERT_EQ(r.result_int(), 200u) << r.body();

    // Two attempts, one trace, a span of its own each, the client's tracestate passed on.
    const auto seen = up.requests();
    ASSERT_EQ(seen.size(), 2u);
    const auto p1 = traceparent_of(seen[0]), p2 = traceparent_of(seen[1]);
    EXPECT_EQ(p1.substr(0, 36), std::string("00-") + client_trace + "-");
    EXPECT_EQ(p2.substr(0, 36), std::string("00-") + client_trace + "-");
    EXPECT_NE(p1.substr(36, 16), p2.substr(36, 16)) << "each attempt is a span of its own";
    EXPECT_NE(p1.substr(36, 16), client_span) << "the upstream's parent is sluice's span, not the client's";
    EXPECT_EQ(p1.substr(52), "-01");
    EXPECT_EQ(seen[1].header("tracestate"), "vendor=opaque");

    const auto spans = col.await(4);
    ASSERT_TRUE(spans.count(p1.substr(36, 16)) && spans.count(p2.substr(36, 16))) << spans.size();
    const auto& a1 = spans.at(p1.substr(36, 16));
    const auto& a2 = spans.at(p2.substr(36, 16));
    const std::string server_id(a1.at("parentSpanId").as_string());
    ASSERT_TRUE(spans.count(server_id));
    const auto& server = spans.at(server_id);
    EXPECT_EQ(server.at("traceId"), client_trace);
    EXPECT_EQ(server.at("parentSpanId"), client_span) << "sluice's span continues the client's";
    EXPECT_EQ(server.at("kind"), 2);
    EXPECT_EQ(server.at("name"), "POST /v1/chat/completions");
    EXPECT_EQ(server.at("traceState"), "vendor=opaque");
    EXPECT_EQ(attribute(server, "http.response.status_code"), "200");
    EXPECT_EQ(attribute(server, "gen_ai.operation.name"), "chat");
    EXPECT_EQ(attribute(server, "gen_ai.request.model"), "sim-1");
    EXPECT_EQ(attribute(server, "gen_ai.response.id"), "chatcmpl-up1");
    EXPECT_EQ(attribute(server, "gen_ai.response.model"), "gpt-4o-mini-2024-07-18");
    EXPECT_EQ(attribute(server, "gen_ai.usage.input_tokens"), "5");
    EXPECT_EQ(attribute(server, "gen_ai.usage.output_tokens"), "7");
    EXPECT_EQ(attribute(server, "sluice.attempts"), "2");
    EXPECT_FALSE(server.contains("status"));
    EXPECT_EQ(a1.at("kind"), 3);
    EXPECT_EQ(a1.at("name"), "chat sim-1");
    EXPECT_EQ(attribute(a1, "sluice.attempt"), "1");
    EXPECT_EQ(attribute(a1, "http.response.status_code"), "503");
    EXPECT_EQ(a1.at("status").at("code"), 2) << "the failed attempt is an error span";
    EXPECT_EQ(attribute(a2, "sluice.attempt"), "2");
    EXPECT_EQ(attribute(a2, "http.response.status_code"), "200");
    EXPECT_EQ(attribute(a2, "server.address"), "127.0.0.1");
    EXPECT_FALSE(a2.contains("status"));
    EXPECT_EQ(a2.at("parentSpanId"), server_id.c_str());
    EXPECT_LE(std::stoull(std::string(a1.at("endTimeUnixNano").as_string())),
              std::stoull(std::string(a2.at("startTimeUnixNano").as_string())))
        << "the retry starts after the first attempt ended";

    // The request's log line names the trace and sluice's span.
    ASSERT_LT(test::wait_until([&] { return log_text.str().find("request completed") != std::string::npos; }, 5000ms),
              5000ms);
    const std::string logs = log_text.str();
    EXPECT_NE(logs.find(std::string("\"trace_id\":\"") + client_trace + "\""), std::string::npos) << logs;
    EXPECT_NE(logs.find("\"span_id\":\"" + server_id + "\""), std::string::npos) << logs;

    // The trace as the collector got it, for docs/operations.md (SLUICE_TRACE_DUMP=FILE).
    if (const char* dump = std::getenv("SLUICE_TRACE_DUMP")) {
      std::ofstream out(dump);
      for (const auto& req : col.listener.requests()) out << req.body << "\n";
    }
  }
  ASSERT_TRUE(obs::init_logging(obs::log_options{}));
}

TEST(Traces, SluiceStartsATraceSampledByRatioAndExportsAFailureWhateverTheRatio) {
  recording_upstream up([](const recording_upstream::seen& r) {
    return r.body.find("fail-me") != std::string::npos ? recording_upstream::response(500, R"({"error":{"message":"x"}})")
                                                       : recording_upstream::response(200, whole_answer);
  });
  collector col;
  test::gateway_box g(traced(up.url(), col.listener.url(), 0.0));
  ASSERT_EQ(test::post_chat(g.port, false).result_int(), 200u);
  ASSERT_EQ(up.requests().size(), 1u);
  const auto started = traceparent_of(up.requests()[0]);
  ASSERT_EQ(started.size(), 55u) << started;
  EXPECT_EQ(started.substr(52), "-00") << "ratio 0: the trace sluice started is not sampled";

  // A failing request: exported (trace-errors), the success before it is not.
  auto r = test::call(g.port, test::bhttp::verb::post, "/v1/chat/completions",
                      R"({"model":"gpt-4o-mini","messages":[{"role":"user","content":"fail-me"}]})");
  EXPECT_GE(r.result_int(), 500u);
  const auto spans = col.await(3);
  std::set<std::string> traces;
  for (const auto& [id, s] : spans) traces.insert(std::string(s.at("traceId").as_string()));
  ASSERT_EQ(traces.size(), 1u);
  EXPECT_NE(*traces.begin(), started.substr(3, 32)) << "the unsampled success was not exported";
  bool server_error = false;
  for (const auto& [id, s] : spans)
    if (s.at("kind") == 2) server_error = s.contains("status") && s.at("status").at("code") == 2;
  EXPECT_TRUE(server_error);
}

TEST(Traces, AStreamsSpansHaveItsFirstTokenAndTheAnsweringAttemptLastsToItsEnd) {
  sim::options so;
  so.listen = "127.0.0.1:0";
  so.tokens = 6;
  so.token_delay = 5ms;
  test::sim_box sim(so);
  collector col;
  test::gateway_box g(traced(sim.url(), col.listener.url()));
  auto r = test::post_chat(g.port, true);
  ASSERT_EQ(r.result_int(), 200u);
  ASSERT_NE(r.body().find("[DONE]"), std::string::npos);
  const auto spans = col.await(4);
  std::map<std::string, json::object> by_name;
  for (const auto& [id, s] : spans) by_name[std::string(s.at("name").as_string())] = s;
  ASSERT_TRUE(by_name.count("time to first token") && by_name.count("stream") && by_name.count("chat sim-1"))
      << spans.size();
  const auto& attempt = by_name.at("chat sim-1");
  const auto& stream = by_name.at("stream");
  EXPECT_EQ(attempt.at("endTimeUnixNano"), stream.at("endTimeUnixNano")) << "the answering attempt is read to the end";
  EXPECT_NE(attribute(attempt, "gen_ai.response.id"), "<absent>") << "read from the stream's first event";
}
