// routing::options: the upstreams: YAML list, --upstream flags, defaults and every validation error;
// engine metrics parsing and the saturation verdict.
#include <gtest/gtest.h>

#include "config/option_table.hpp"
#include "routing/engine_pressure.hpp"
#include "routing/options.hpp"

using namespace sluice;
using namespace sluice::routing;

namespace {

result<options> load(std::string_view yaml, std::vector<std::string> flags = {}) {
  options o;
  config::option_table t;
  o.register_options(t);
  auto r = t.apply_yaml_text(yaml, "test.yaml");
  if (!r) return std::move(r).err();
  auto f = o.finish(flags, "OPENAI_API_KEY");
  if (!f) return std::move(f).err();
  return o;
}

}  // namespace

TEST(RoutingOptions, ParsesTheUpstreamsList) {
  auto o = load(R"(
upstreams:
  - name: openai
    url: https://api.openai.com
    key-env: OPENAI_KEY_2
    weight: 3
    models: [gpt-4o, gpt-4o-mini]
    max-concurrent: 100
    requests-per-minute: 500
    tokens-per-minute: 200000
  - name: local-vllm
    url: http://10.0.0.5:8000
    probe: true
    engine-metrics: http://10.0.0.5:8000/metrics
max-attempts: 4
request-timeout: 2m
usage-injection: always
circuit-error-rate: 0.25
)");
  ASSERT_TRUE(o.has_value()) << o.err().message;
  ASSERT_EQ(o->upstreams.size(), 2u);
  const auto& a = o->upstreams[0];
  EXPECT_EQ(a.name, "openai");
  EXPECT_EQ(a.key_env, "OPENAI_KEY_2");
  EXPECT_EQ(a.weight, 3u);
  EXPECT_TRUE(a.serves("gpt-4o"));
  EXPECT_FALSE(a.serves("llama"));
  EXPECT_EQ(a.max_concurrent, 100u);
  EXPECT_EQ(a.requests_per_minute, 500u);
  EXPECT_EQ(a.tokens_per_minute, 200000u);
  const auto& b = o->upstreams[1];
  EXPECT_EQ(b.key_env, "OPENAI_API_KEY") << "the global key variable by default";
  EXPECT_TRUE(b.probe);
  EXPECT_TRUE(b.serves("anything"));
  EXPECT_EQ(o->max_attempts, 4u);
  EXPECT_EQ(o->request_timeout, duration(std::chrono::minutes(2)));
  EXPECT_EQ(o->usage, usage_mode::always);
  EXPECT_DOUBLE_EQ(o->circuit_error_rate, 0.25);
}

TEST(RoutingOptions, FlagsAddPlainUpstreamsNamedInOrder) {
  auto one = load("", {"http://127.0.0.1:9000"});
  ASSERT_TRUE(one.has_value());
  EXPECT_EQ(one->upstreams[0].name, "default");
  auto two = load("", {"http://127.0.0.1:9000", "http://127.0.0.1:9001"});
  ASSERT_TRUE(two.has_value());
  EXPECT_EQ(two->upstreams[0].name, "upstream-1");
  EXPECT_EQ(two->upstreams[1].name, "upstream-2");
  EXPECT_TRUE(two->upstreams[1].serves("x"));
}

TEST(RoutingOptions, BadInputNamesTheField) {
  struct tc {
    const char* yaml;
    const char* needle;
  };
  for (auto c : {tc{"upstreams: {url: x}", "expected a list"},
                 tc{"upstreams:\n  - url: ftp://x\n", "upstreams[0]: url"},
                 tc{"upstreams:\n  - url: http://a\n    colour: red\n", "unknown option 'colour'"},
                 tc{"upstreams:\n  - url: http://a\n    weight: 0\n", "weight"},
                 tc{"upstreams:\n  - url: http://a\n    weight: heavy\n", "weight"},
                 tc{"upstreams:\n  - {name: a, url: 'http://a'}\n  - {name: a, url: 'http://b'}\n", "used twice"},
                 tc{"upstreams:\n  - {name: 'a b', url: 'http://a'}\n", "name"},
                 tc{"upstreams:\n  - {url: 'http://a', engine-metrics: 'nope'}\n", "engine-metrics"},
                 tc{"max-attempts: 0\nupstreams:\n  - url: http://a\n", "max-attempts"},
                 tc{"usage-injection: sometimes\n", "usage-injection"},
                 tc{"circuit-error-rate: 2\n", "circuit-error-rate"},
                 tc{"circuit-error-rate: nan\n", "circuit-error-rate"},
                 tc{"circuit-error-rate: 0.5x\n", "circuit-error-rate"},
                 tc{"circuit-window: 1025\nupstreams:\n  - url: http://a\n", "circuit-window: must be 1..1024"},
                 tc{"", "no upstream"}}) {
    auto o = load(c.yaml);
    ASSERT_FALSE(o.has_value()) << c.yaml;
    EXPECT_NE(o.err().message.find(c.needle), std::string::npos) << c.yaml << " -> " << o.err().message;
  }
}

TEST(RoutingOptions, UpstreamsIsNotAFlag) {
  options o;
  config::option_table t;
  o.register_options(t);
  bool found = false;
  for (const auto& s : t.specs())
    if (s.name == "upstreams") {
      found = true;
      EXPECT_FALSE(s.set);
      EXPECT_TRUE(s.set_node);
    }
  EXPECT_TRUE(found);
}

TEST(EnginePressure, ReadsVllmAndLlamaCppExpositions) {
  auto v = parse_engine_metrics(R"(# HELP vllm:num_requests_waiting Number of requests waiting.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="llama"} 3.0
vllm:num_requests_waiting{engine="1",model_name="llama"} 2.0
vllm:num_requests_running{model_name="llama"} 12
vllm:kv_cache_usage_perc{model_name="llama"} 0.42
vllm:gpu_cache_usage_perc{model_name="we\"ird}"} 0.97 1700000000000
)");
  ASSERT_TRUE(v.waiting);
  EXPECT_DOUBLE_EQ(*v.waiting, 5.0) << "summed over engines";
  ASSERT_TRUE(v.kv_cache);
  EXPECT_DOUBLE_EQ(*v.kv_cache, 0.97) << "the highest, labels with quotes and braces skipped right";
  EXPECT_FALSE(v.deferred);
  auto l = parse_engine_metrics("llamacpp:kv_cache_usage_ratio 0.5\r\nllamacpp:requests_deferred 2\r\n");
  EXPECT_DOUBLE_EQ(*l.kv_cache, 0.5);
  EXPECT_DOUBLE_EQ(*l.deferred, 2);
  auto junk = parse_engine_metrics("vllm:num_requests_waiting{ 7\nvllm:num_requests_waiting NaN\nrandom 1\n");
  EXPECT_FALSE(junk.any());
}

TEST(EnginePressure, SaturationVerdict) {
  engine_limits lim;  // waiting > 0, kv >= 0.95, deferred > 0
  engine_sample s;
  EXPECT_EQ(saturation_reason(s, lim), "");
  s.waiting = 0;
  s.kv_cache = 0.5;
  EXPECT_EQ(saturation_reason(s, lim), "");
  s.waiting = 1;
  EXPECT_EQ(saturation_reason(s, lim), "waiting");
  s.kv_cache = 0.95;
  EXPECT_EQ(saturation_reason(s, lim), "kv_cache");
  engine_sample d;
  d.deferred = 1;
  EXPECT_EQ(saturation_reason(d, lim), "deferred");
  lim.max_deferred = 4;
  EXPECT_EQ(saturation_reason(d, lim), "");
}
