#include "config/commented_yaml.hpp"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "uncommented.hpp"

using namespace sluice;
using namespace std::chrono_literals;

namespace {

struct sample {
  std::string listen = "127.0.0.1:8080";
  std::string empty;
  std::string quoted = R"(say "hi" \ bye: now)";
  std::uint64_t buffer = 64 * 1024;
  duration timeout = 10s;
  bool stream = true;
  std::vector<std::string> upstreams{"http://a:1/v1", "http://b"};
  std::vector<std::string> none;
  config::option_table table() {
    config::option_table t;
    t.add("listen", "address", listen)
        .add("empty", "an empty string", empty)
        .add("quoted", "quotes, a backslash and a colon", quoted)
        .add_size("stream-buffer", "bytes", buffer)
        .add_duration("header-timeout", "time", timeout)
        .add("stream", "flag", stream)
        .add_list("upstream", "urls", upstreams)
        .add_list("models", "none by default", none)
        .add_node("upstreams", "a list of maps", [](const YAML::Node&) -> result<void> { return ok; });
    return t;
  }
};

}  // namespace

TEST(CommentedYaml, EveryOptionStandsUnderItsHelpCommentedOut) {
  sample s;
  auto table = s.table();
  auto text = config::commented_yaml(table, "title line one\ntitle line two");
  EXPECT_EQ(text.rfind("# title line one\n# title line two\n", 0), 0u) << text;
  EXPECT_NE(text.find("# address\n# listen: \"127.0.0.1:8080\"\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# stream-buffer: 64KiB\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# upstream: [\"http://a:1/v1\", \"http://b\"]\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# models: []\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# upstreams: a YAML list of maps"), std::string::npos) << text;
  // Nothing is in force: the whole file is comments and blank lines.
  auto node = YAML::Load(text);
  EXPECT_TRUE(node.IsNull());
}

TEST(CommentedYaml, UncommentedItReadsBackAsTheDefaults) {
  sample defaults;
  auto text = config::commented_yaml(defaults.table(), "t");
  sample changed;
  changed.listen = "x:1";
  changed.empty = "not empty";
  changed.quoted = "plain";
  changed.buffer = 1;
  changed.timeout = 1s;
  changed.stream = false;
  changed.upstreams = {"http://c"};
  auto table = changed.table();
  auto yaml = test::uncommented_options(text, table);
  ASSERT_EQ(std::count(yaml.begin(), yaml.end(), '\n'), 8) << yaml;
  ASSERT_TRUE(table.apply_yaml_text(yaml, "test")) << yaml;
  EXPECT_EQ(changed.listen, defaults.listen);
  EXPECT_EQ(changed.empty, "");
  EXPECT_EQ(changed.quoted, defaults.quoted);
  EXPECT_EQ(changed.buffer, defaults.buffer);
  EXPECT_EQ(changed.timeout, defaults.timeout);
  EXPECT_EQ(changed.stream, true);
  EXPECT_EQ(changed.upstreams, defaults.upstreams);
}

TEST(CommentedYaml, ScalarsNeedingQuotesAreQuotedAndReadBackTheSame) {
  for (std::string v : {"", "a b", "x: y", "#x", "-1", "null", "[a]", "{a}", "'q'", "\"d\"", "back\\slash", "*ref",
                        "&a", "!tag", "%p", "@at", "`t`", "a,b", "yes", "true", "~", "0x10", "1e3"}) {
    auto text = "k: " + config::yaml_scalar(v) + "\n";
    auto node = YAML::Load(text);
    ASSERT_TRUE(node["k"].IsScalar()) << text;
    EXPECT_EQ(node["k"].Scalar(), v) << text;
  }
}
