#include "sim/request.hpp"

#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

#include <algorithm>

using namespace sluice;
using namespace std::chrono_literals;

TEST(SimRequest, RejectsBadBodiesWithTheirParam) {
  auto bad_json = sim::parse_completion(sim::api::chat, "{not json", 1);
  ASSERT_FALSE(bad_json.has_value());
  EXPECT_EQ(bad_json.err().code, errc::bad_request);
  EXPECT_FALSE(sim::parse_completion(sim::api::chat, "[1,2]", 1).has_value());
  auto no_model = sim::parse_completion(sim::api::chat, R"({"messages":[{"role":"user","content":"x"}]})", 1);
  ASSERT_FALSE(no_model.has_value());
  EXPECT_EQ(no_model.err().param, "model");
  auto no_messages = sim::parse_completion(sim::api::chat, R"({"model":"m"})", 1);
  ASSERT_FALSE(no_messages.has_value());
  EXPECT_EQ(no_messages.err().param, "messages");
  auto bad_max = sim::parse_completion(sim::api::chat, R"({"model":"m","max_tokens":0,"messages":[{"role":"user"}]})", 1);
  ASSERT_FALSE(bad_max.has_value());
  EXPECT_EQ(bad_max.err().param, "max_tokens");
  auto bad_stream = sim::parse_completion(sim::api::chat, R"({"model":"m","stream":"yes","messages":[{}]})", 1);
  ASSERT_FALSE(bad_stream.has_value());
  EXPECT_EQ(bad_stream.err().param, "stream");
  EXPECT_FALSE(sim::parse_completion(sim::api::completion, R"({"model":"m"})", 1).has_value());
}

TEST(SimRequest, SmallerOfTheTwoTokenCapsWins) {
  auto r = sim::parse_completion(
      sim::api::chat, R"({"model":"m","max_tokens":9,"max_completion_tokens":4,"messages":[{"role":"user","content":"x"}]})", 1);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->max_tokens, 4u);
}

TEST(SimRequest, HeadersOverrideOptions) {
  sim::options o;
  o.stall_after = 3;
  sim::header_overrides h;
  h.tokens = "5";
  h.ttft = "250ms";
  h.token_delay = "10ms";
  h.token_size = "9";
  h.header_delay = "1s";
  h.fault = "reset";
  h.fault_after = "2";
  auto s = sim::resolve_settings(o, h);
  ASSERT_TRUE(s.has_value()) << s.err().message;
  EXPECT_EQ(s->tokens, 5u);
  EXPECT_EQ(s->token_size, 9u);
  EXPECT_EQ(s->ttft, 250ms);
  EXPECT_EQ(s->token_delay, 10ms);
  EXPECT_EQ(s->header_delay, 1s);
  EXPECT_EQ(s->reset_after, 2u);
  EXPECT_FALSE(s->stall_after.has_value()) << "a pinned fault replaces the configured ones";
  EXPECT_TRUE(s->faults_pinned);

  auto none = sim::resolve_settings(o, sim::header_overrides{});
  ASSERT_TRUE(none.has_value());
  EXPECT_EQ(none->tokens, o.tokens);
  EXPECT_EQ(none->stall_after, 3u);
}

TEST(SimRequest, BadHeaderValuesNameTheHeader) {
  sim::options o;
  for (auto [field, value, name] :
       {std::tuple{&sim::header_overrides::tokens, "many", "x-sim-tokens"},
        std::tuple{&sim::header_overrides::ttft, "5", "x-sim-ttft"},
        std::tuple{&sim::header_overrides::fault, "explode", "x-sim-fault"},
        std::tuple{&sim::header_overrides::status, "99", "x-sim-status"},
        std::tuple{&sim::header_overrides::token_size, "0", "x-sim-token-size"}}) {
    sim::header_overrides h;
    h.*field = value;
    auto s = sim::resolve_settings(o, h);
    ASSERT_FALSE(s.has_value()) << name;
    EXPECT_NE(s.err().message.find(name), std::string::npos) << s.err().message;
  }
}

TEST(SimRequest, FaultRatesAndPinnedFaults) {
  sim::options o;
  o.fault_5xx_rate = 0.25;
  o.fault_429_rate = 0.25;
  auto s = sim::resolve_settings(o, {});
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(sim::pick_status_fault(*s, o, 0.1), sim::status_fault::http_5xx);
  EXPECT_EQ(sim::pick_status_fault(*s, o, 0.3), sim::status_fault::http_429);
  EXPECT_EQ(sim::pick_status_fault(*s, o, 0.6), sim::status_fault::none);

  sim::header_overrides none;
  none.fault = "none";
  auto pinned = sim::resolve_settings(o, none);
  ASSERT_TRUE(pinned.has_value());
  EXPECT_EQ(sim::pick_status_fault(*pinned, o, 0.1), sim::status_fault::none) << "x-sim-fault: none disables the rates";

  sim::header_overrides status;
  status.status = "503";
  auto forced = sim::resolve_settings(o, status);
  ASSERT_TRUE(forced.has_value());
  EXPECT_EQ(sim::pick_status_fault(*forced, o, 0.9), sim::status_fault::forced);
  EXPECT_EQ(forced->status, 503);
}

TEST(SimOptions, RegisteredAsFlagsAndConfigKeys) {
  sim::options o;
  config::option_table t;
  o.register_options(t);
  // The table gives each spec one name for both the flag and the YAML key.
  std::vector<std::string> names;
  for (const auto& s : t.specs()) names.push_back(s.name);
  for (const char* want : {"listen", "threads", "tokens", "ttft", "token-delay", "token-size", "seed", "models",
                           "fault-5xx-rate", "fault-429-rate", "retry-after", "stall-after", "reset-after",
                           "malformed-after", "header-delay"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;

  CLI::App app;
  t.register_cli(app);
  // CLI11 takes a reversed argv here.
  app.parse(std::vector<std::string>{"2s", "--reset-after", "0", "--token-size", "b", "--models", "a", "--models",
                                     "3", "--stall-after", "200ms", "--ttft", "64", "--tokens"});
  auto r = t.apply_cli();
  EXPECT_FALSE(r.has_value()) << "reset-after takes a token count";
  EXPECT_EQ(o.tokens, 64u);
  EXPECT_EQ(o.ttft, 200ms);
  EXPECT_EQ(o.models, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(o.stall_after, 3u);
  EXPECT_FALSE(o.validate().has_value()) << "token-size 0 is rejected";
  o.token_size = 4;
  EXPECT_TRUE(o.validate().has_value());
  o.fault_5xx_rate = 0.75;
  o.fault_429_rate = 0.5;
  EXPECT_FALSE(o.validate().has_value()) << "rates summing past 1";
}

TEST(SimOptions, RateLimitsFromYamlAndFlags) {
  sim::options o;
  EXPECT_EQ(o.limit_rpm, 0u) << "off by default";
  EXPECT_EQ(o.limit_tpm, 0u);
  config::option_table t;
  o.register_options(t);
  ASSERT_TRUE(t.apply_yaml_text("limit-rpm: 3\nlimit-tpm: 40000\n").has_value());
  EXPECT_EQ(o.limit_rpm, 3u);
  EXPECT_EQ(o.limit_tpm, 40000u);
  CLI::App app;
  t.register_cli(app);
  app.parse(std::vector<std::string>{"500", "--limit-rpm"});
  ASSERT_TRUE(t.apply_cli().has_value());
  EXPECT_EQ(o.limit_rpm, 500u);
  EXPECT_TRUE(o.validate().has_value());
  o.limit_tpm = 2'000'000'000;
  EXPECT_FALSE(o.validate().has_value()) << "beyond the bucket's fixed-point range";
}
