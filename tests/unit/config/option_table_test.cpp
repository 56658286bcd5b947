#include "config/option_table.hpp"

#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

using namespace sluice;
using namespace std::chrono_literals;

namespace {
struct opts {
  std::string listen = "127.0.0.1:8080";
  std::uint64_t buffer = 64 * 1024;
  duration timeout = 10s;
  bool stream = false;
  std::uint64_t threads = 0;
  double ratio = 1.5;
  std::vector<std::string> upstreams{"http://default"};
  config::option_table table() {
    config::option_table t;
    t.add("listen", "address", listen)
        .add_size("stream-buffer", "bytes", buffer)
        .add_duration("header-timeout", "time", timeout)
        .add("stream", "flag", stream)
        .add("threads", "count", threads)
        .add("ratio", "a non-negative number", ratio)
        .add_list("upstream", "urls", upstreams);
    return t;
  }
};
}  // namespace

TEST(OptionTable, YamlThenFlagsFlagsWin) {
  opts o;
  auto t = o.table();
  CLI::App app;
  t.register_cli(app);
  ASSERT_TRUE(t.apply_yaml_text("listen: 0.0.0.0:9000\nstream-buffer: 128KiB\nheader-timeout: 2s\nupstream: [http://a, http://b]\n").has_value());
  std::vector<std::string> args{"--stream-buffer", "32KiB", "--stream"};
  std::reverse(args.begin(), args.end());
  app.parse(args);
  ASSERT_TRUE(t.apply_cli().has_value());
  EXPECT_EQ(o.listen, "0.0.0.0:9000");
  EXPECT_EQ(o.buffer, 32u * 1024);
  EXPECT_EQ(o.timeout, 2s);
  EXPECT_TRUE(o.stream);
  EXPECT_EQ(o.upstreams, (std::vector<std::string>{"http://a", "http://b"}));
}

TEST(OptionTable, FlagAcceptsExplicitFalse) {
  opts o;
  o.stream = true;
  auto t = o.table();
  CLI::App app;
  t.register_cli(app);
  app.parse(std::vector<std::string>{"--stream=false"});
  ASSERT_TRUE(t.apply_cli().has_value());
  EXPECT_FALSE(o.stream);
}

TEST(OptionTable, RejectsUnknownKeysAndBadValuesWithTheirName) {
  opts o;
  auto t = o.table();
  auto r = t.apply_yaml_text("listn: x\n", "f.yaml");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.err().message.find("unknown option 'listn'"), std::string::npos);
  auto r2 = t.apply_yaml_text("stream-buffer: lots\n", "f.yaml");
  ASSERT_FALSE(r2.has_value());
  EXPECT_NE(r2.err().message.find("stream-buffer"), std::string::npos);
  auto r3 = t.apply_yaml_text("header-timeout: 10\n", "f.yaml");
  ASSERT_FALSE(r3.has_value());
  auto r4 = t.apply_yaml_text("- a\n- b\n", "f.yaml");
  ASSERT_FALSE(r4.has_value());
  for (const char* bad : {"ratio: -1\n", "ratio: nan\n", "ratio: inf\n", "ratio: 2x\n", "ratio: ''\n"}) {
    auto r5 = t.apply_yaml_text(bad, "f.yaml");
    ASSERT_FALSE(r5.has_value()) << bad;
    EXPECT_NE(r5.err().message.find("expected a non-negative number"), std::string::npos) << r5.err().message;
  }
  ASSERT_TRUE(t.apply_yaml_text("ratio: 0.25\n", "f.yaml").has_value());
  EXPECT_EQ(o.ratio, 0.25);
}

TEST(HostPort, Parses) {
  auto a = config::parse_host_port("127.0.0.1:0");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 0);
  auto b = config::parse_host_port("[::1]:8080");
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->host, "::1");
  EXPECT_EQ(b->port, 8080);
  for (auto bad : {"", "host", ":80", "h:", "h:99999", "h:8x", "[::1]8080"})
    EXPECT_FALSE(config::parse_host_port(bad).has_value()) << bad;
}

// fuzz_config found that a key that is not a plain scalar made the loader throw out of
// apply_yaml_text (std::terminate in `sluice serve --config`): it is a bad_request now.
TEST(OptionTable, KeysThatAreNotPlainWordsAreRefusedNotThrown) {
  opts o;
  auto t = o.table();
  for (const char* text : {"? nmae:\n", "? [a, b]\n: 1\n", "? {a: 1}\n: 2\n", "~: 1\n"}) {
    SCOPED_TRACE(text);
    result<void> r = ok;
    EXPECT_NO_THROW(r = t.apply_yaml_text(text, "f.yaml"));
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.err().code, errc::bad_request);
  }
}
