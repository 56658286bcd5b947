#include "redis/script.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

#include "config/option_table.hpp"
#include "redis/metrics.hpp"
#include "redis/options.hpp"

namespace sluice::redis {
namespace {

TEST(RedisScript, Sha1KnownVectors) {
  EXPECT_EQ(sha1_hex(""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  EXPECT_EQ(sha1_hex("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
}

TEST(RedisScript, MakeHashesTheSource) {
  // The SHA1 Redis itself reports for SCRIPT LOAD "return 1".
  auto s = script::make("one", "return 1");
  EXPECT_EQ(s.name, "one");
  EXPECT_EQ(s.source, "return 1");
  EXPECT_EQ(s.sha1, "e0e1f9fabfc9d4800c877a703b823ac0578ff8db");
}

TEST(RedisOptions, ResolveReadsThePasswordFromTheEnvironment) {
  options o;
  o.url = "redis://u:inurl@127.0.0.1:6390/2";
  auto plain = o.resolve();
  ASSERT_TRUE(plain) << plain.err().message;
  EXPECT_EQ(plain->server.password, "inurl");
  EXPECT_EQ(plain->command_timeout, o.command_timeout);

  o.password_env = "SLUICE_TEST_REDIS_PW_UNSET_93";
  ::unsetenv(o.password_env.c_str());
  auto missing = o.resolve();
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.err().message.find("SLUICE_TEST_REDIS_PW_UNSET_93"), std::string::npos);

  ::setenv(o.password_env.c_str(), "fromenv", 1);
  auto env = o.resolve();
  ASSERT_TRUE(env);
  EXPECT_EQ(env->server.password, "fromenv");
  EXPECT_EQ(env->server.user, "u");
  EXPECT_EQ(env->server.db, 2u);
  ::unsetenv(o.password_env.c_str());
}

TEST(RedisOptions, ResolveRejects) {
  options o;
  o.url = "redis://:secretpw@h:bad";
  auto bad_url = o.resolve();
  ASSERT_FALSE(bad_url);
  EXPECT_EQ(bad_url.err().message.find("secretpw"), std::string::npos);
  o.url = "redis://h";
  o.max_in_flight = 0;
  EXPECT_FALSE(o.resolve());
  o.max_in_flight = 1;
  o.command_timeout = duration::zero();
  EXPECT_FALSE(o.resolve());
}

TEST(RedisOptions, RegisteredNames) {
  options o;
  config::option_table t;
  o.register_options(t);
  ASSERT_TRUE(t.apply_yaml_text("redis: redis://h:1/0\nredis-command-timeout: 20ms\nredis-max-in-flight: 8\n"
                                "redis-password-env: PW\n"));
  EXPECT_EQ(o.url, "redis://h:1/0");
  EXPECT_EQ(o.command_timeout, std::chrono::milliseconds(20));
  EXPECT_EQ(o.max_in_flight, 8u);
  EXPECT_EQ(o.password_env, "PW");
  EXPECT_TRUE(o.enabled());
}

TEST(RedisMetrics, FamiliesAndLabels) {
  const script scripts[] = {script::make("admit", "return 1")};
  metrics m(scripts);
  EXPECT_EQ(m.labels(), 2u);
  m.command_done(1, outcome::timeout);
  m.command_done(0, outcome::ok);
  m.command_done(99, outcome::overloaded);  // out of range: counted as a plain command
  m.round_trip(0.001);
  m.connected(true);
  m.in_flight(3);
  bool commands = false, seconds = false, connected = false, in_flight = false;
  for (const auto& f : m.Collect()) {
    if (f.name == "sluice_redis_commands_total") {
      commands = true;
      EXPECT_EQ(f.metric.size(), 2 * outcome_count);
      double admit_timeouts = 0, command_overloaded = 0;
      for (const auto& s : f.metric) {
        std::string script, out;
        for (const auto& l : s.label) {
          if (l.name == "script") script = l.value;
          if (l.name == "outcome") out = l.value;
        }
        if (script == "admit" && out == "timeout") admit_timeouts = s.counter.value;
        if (script == "command" && out == "overloaded") command_overloaded = s.counter.value;
      }
      EXPECT_EQ(admit_timeouts, 1);
      EXPECT_EQ(command_overloaded, 1);
    }
    if (f.name == "sluice_redis_command_seconds") seconds = true;
    if (f.name == "sluice_redis_connected") connected = f.metric.at(0).gauge.value == 1;
    if (f.name == "sluice_redis_in_flight") in_flight = f.metric.at(0).gauge.value == 3;
  }
  EXPECT_TRUE(commands);
  EXPECT_TRUE(seconds);
  EXPECT_TRUE(connected);
  EXPECT_TRUE(in_flight);
}

}  // namespace
}  // namespace sluice::redis
