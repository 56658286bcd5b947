// The control body (POST /sim/control, server::control), the script FIFO and the /metrics text.
#include "sim/control.hpp"

#include <gtest/gtest.h>

#include "sim/metrics.hpp"

using namespace sluice;

namespace {

sim::control_update parsed(std::string_view body) {
  auto u = sim::parse_control(body, sim::options{});
  EXPECT_TRUE(u.has_value()) << (u ? "" : u.err().message);
  return u ? std::move(*u) : sim::control_update{};
}

}  // namespace

TEST(SimControl, ScriptEntriesActAsTheirHeaders) {
  auto u = parsed(R"({"script":[{"fault":"429","retry_after":"1500ms"},{"status":503},
                    {"tokens":3,"ttft":"2s","token_delay":"10ms","header_delay":"1s","content":"hi"},
                    {"fault":"stall","fault_after":"2"},{}]})");
  ASSERT_EQ(u.script.size(), 5u);
  sim::options o;
  auto settings = [&](std::size_t i, sim::header_overrides h = {}) {
    u.script[i].apply(h);
    auto s = sim::resolve_settings(o, h);
    EXPECT_TRUE(s.has_value());
    return *s;
  };
  EXPECT_EQ(settings(0).fault, sim::status_fault::http_429);
  EXPECT_EQ(settings(0).retry_after, std::chrono::milliseconds(1500));
  EXPECT_EQ(settings(1).fault, sim::status_fault::forced);
  EXPECT_EQ(settings(1).status, 503);
  auto third = settings(2);
  EXPECT_EQ(third.content, "hi");
  EXPECT_EQ(third.ttft, std::chrono::seconds(2));
  EXPECT_EQ(third.header_delay, std::chrono::seconds(1));
  EXPECT_EQ(settings(3).stall_after, 2u);

  // On top of the request's own headers: the entry's fields win, the others stay.
  sim::header_overrides own;
  own.fault = "5xx";
  own.tokens = "9";
  own.content_b64 = "eHl6";
  auto merged = settings(2, own);
  EXPECT_EQ(merged.fault, sim::status_fault::http_5xx);
  EXPECT_EQ(merged.content, "hi") << "the entry's content beats the request's content-b64";
  auto empty = settings(4, own);
  EXPECT_EQ(empty.fault, sim::status_fault::http_5xx);
  EXPECT_EQ(empty.content, "xyz") << "an empty entry leaves the request's own headers";
}

TEST(SimControl, BadBodiesNameTheField) {
  struct bad_case {
    const char* body;
    const char* param;
  };
  for (auto [body, param] : {bad_case{R"({"script":[{"fault":"429"},{"fault":"explode"}]})", "script[1].fault"},
                             bad_case{R"({"script":[{"status":99}]})", "script[0].status"},
                             bad_case{R"({"script":[{"ttft":5}]})", "script[0].ttft"},
                             bad_case{R"({"script":[{"ttft":"soon"}]})", "script[0].ttft"},
                             bad_case{R"({"script":[{"tokens":-1}]})", "script[0].tokens"},
                             bad_case{R"({"script":[{"fault_after":"x"}]})", "script[0].fault_after"},
                             bad_case{R"({"script":[{"tokenz":3}]})", "script[0].tokenz"},
                             bad_case{R"({"script":[{"content":""}]})", "script[0].content"},
                             bad_case{R"({"script":[7]})", "script[0]"},
                             bad_case{R"({"script":{"fault":"429"}})", "script"},
                             bad_case{R"({"engine":{"kv_cache_usage":1.5}})", "engine.kv_cache_usage"},
                             bad_case{R"({"engine":{"waiting":-2}})", "engine.waiting"},
                             bad_case{R"({"engine":{"queue":1}})", "engine.queue"},
                             bad_case{R"({"engine":{"paused":1}})", "engine.paused"},
                             bad_case{R"({"clear":"yes"})", "clear"},
                             bad_case{R"({"scrip":[]})", "scrip"}}) {
    auto u = sim::parse_control(body, sim::options{});
    ASSERT_FALSE(u.has_value()) << body;
    EXPECT_EQ(u.err().code, errc::bad_request);
    EXPECT_EQ(u.err().param, param) << body;
    EXPECT_EQ(u.err().message.rfind(std::string(param) + ": ", 0), 0u) << u.err().message;
  }
  EXPECT_FALSE(sim::parse_control("{", sim::options{}).has_value());
  EXPECT_FALSE(sim::parse_control("[]", sim::options{}).has_value());
}

TEST(SimControl, StateAppliesClearFirstAndPopsInOrder) {
  sim::control_state st;
  EXPECT_EQ(st.to_json(), R"({"script_remaining":0,"engine":{"waiting":0,"kv_cache_usage":0,"deferred":0,"paused":false}})");
  ASSERT_TRUE(st.apply(parsed(R"({"engine":{"waiting":4,"kv_cache_usage":0.75},"script":[{"status":500},{"status":501}]})")));
  ASSERT_TRUE(st.apply(parsed(R"({"engine":{"deferred":2,"paused":true},"script":[{"status":502}]})")));
  EXPECT_EQ(st.script_remaining(), 3u);
  EXPECT_EQ(st.to_json(), R"({"script_remaining":3,"engine":{"waiting":4,"kv_cache_usage":0.75,"deferred":2,"paused":true}})");
  EXPECT_TRUE(st.paused());
  EXPECT_EQ(st.pop()->status, "500");

  // clear empties the script and resets the engine before the body's own fields apply.
  ASSERT_TRUE(st.apply(parsed(R"({"engine":{"waiting":1},"clear":true,"script":[{"status":503}]})")));
  EXPECT_EQ(st.script_remaining(), 1u);
  auto e = st.engine();
  EXPECT_EQ(e.waiting, 1u);
  EXPECT_EQ(e.kv_cache_usage, 0);
  EXPECT_EQ(e.deferred, 0u);
  EXPECT_FALSE(e.paused);
  EXPECT_FALSE(st.paused()) << "clear resumes a paused engine";
  EXPECT_EQ(st.pop()->status, "503");
  EXPECT_FALSE(st.pop().has_value());
  EXPECT_EQ(st.script_remaining(), 0u);
}

TEST(SimControl, ScriptIsBounded) {
  sim::control_state st;
  sim::control_update big;
  big.script.resize(sim::max_script_entries - 1);
  ASSERT_TRUE(st.apply(big));
  sim::control_update two;
  two.script.resize(2);
  two.waiting = 9;
  auto r = st.apply(two);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.err().param, "script");
  EXPECT_EQ(st.script_remaining(), sim::max_script_entries - 1) << "refused whole";
  EXPECT_EQ(st.engine().waiting, 0u) << "nothing of a refused body applies";
  two.clear = true;
  EXPECT_TRUE(st.apply(two).has_value()) << "after a clear it fits";
  EXPECT_EQ(st.script_remaining(), 2u);

  std::string huge = R"({"script":[)";
  for (std::size_t i = 0; i <= sim::max_script_entries; ++i) huge += i ? ",{}" : "{}";
  huge += "]}";
  auto p = sim::parse_control(huge, sim::options{});
  ASSERT_FALSE(p.has_value());
  EXPECT_EQ(p.err().param, "script");
}

TEST(SimEngineMetrics, ExpositionShape) {
  sim::engine_sample s;
  s.running = 2;
  s.succeeded = 7;
  s.settable.waiting = 3;
  s.settable.kv_cache_usage = 0.5;
  s.settable.deferred = 1;
  auto text = sim::engine_metrics_text("m\"1", s);
  const std::string l = R"({model_name="m\"1"})";
  for (auto [series, value] : {std::pair{"vllm:num_requests_running", "2"}, std::pair{"vllm:num_requests_waiting", "3"},
                               std::pair{"vllm:gpu_cache_usage_perc", "0.5"}, std::pair{"vllm:kv_cache_usage_perc", "0.5"},
                               std::pair{"vllm:request_success_total", "7"},
                               std::pair{"llamacpp:kv_cache_usage_ratio", "0.5"},
                               std::pair{"llamacpp:requests_processing", "2"},
                               std::pair{"llamacpp:requests_deferred", "1"}}) {
    EXPECT_NE(text.find("\n" + std::string(series) + l + " " + value + "\n"), std::string::npos) << series << "\n" << text;
    EXPECT_NE(text.find("# TYPE " + std::string(series) + " "), std::string::npos) << series;
    EXPECT_NE(text.find("# HELP " + std::string(series) + " "), std::string::npos) << series;
  }
  EXPECT_NE(text.find("# TYPE vllm:request_success_total counter\n"), std::string::npos);
  EXPECT_EQ(text.back(), '\n');
}

TEST(SimControl, ContentArrayGivesEachChoiceItsText) {
  auto u = parsed(R"({"script":[{"content":["{\"a\":1}","nope"]}]})");
  ASSERT_EQ(u.script.size(), 1u);
  EXPECT_EQ(u.script[0].content, "{\"a\":1}");
  sim::header_overrides h;
  u.script[0].apply(h);
  auto s = sim::resolve_settings(sim::options{}, h);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->content, "{\"a\":1}");
  EXPECT_EQ(s->choice_contents, (std::vector<std::string>{"{\"a\":1}", "nope"}));
  for (auto [body, param] : {std::pair{R"({"script":[{"content":[]}]})", "script[0].content"},
                             std::pair{R"({"script":[{"content":["a",""]}]})", "script[0].content[1]"},
                             std::pair{R"({"script":[{"content":["a",3]}]})", "script[0].content[1]"},
                             std::pair{R"({"script":[{"content":{"a":1}}]})", "script[0].content"}}) {
    auto r = sim::parse_control(body, sim::options{});
    ASSERT_FALSE(r.has_value()) << body;
    EXPECT_EQ(r.err().param, param) << body;
  }
}
