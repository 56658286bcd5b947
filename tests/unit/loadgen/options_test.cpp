#include <gtest/gtest.h>

#include <CLI/CLI.hpp>

#include <algorithm>

#include "config/option_table.hpp"
#include "loadgen/engine.hpp"
#include "loadgen/loadgen.hpp"
#include "loadgen/target.hpp"

using namespace sluice;
using namespace sluice::loadgen;

namespace {

options valid() {
  options o;
  o.target = "http://127.0.0.1:8080";
  return o;
}

}  // namespace

TEST(loadgen_target, parses_host_port_and_prefix) {
  auto t = parse_target("http://127.0.0.1:8080");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->host, "127.0.0.1");
  EXPECT_EQ(t->port, 8080);
  EXPECT_EQ(t->host_header, "127.0.0.1:8080");
  EXPECT_EQ(t->base_path, "");

  t = parse_target("http://localhost/gw/");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->host, "localhost");
  EXPECT_EQ(t->port, 80);
  EXPECT_EQ(t->base_path, "/gw");

  t = parse_target("http://[::1]:9000");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->host, "::1");
  EXPECT_EQ(t->port, 9000);
  EXPECT_EQ(t->host_header, "[::1]:9000");
}

TEST(loadgen_target, rejects_what_it_cannot_speak) {
  for (const char* bad : {"https://127.0.0.1:8443", "127.0.0.1:8080", "http://", "http://:80", "http://h:0",
                          "http://h:65536", "http://h:80x", "http://h:", "http://[::1", "http://u:p@h:80",
                          "http://h:80/a?b=1"})
    EXPECT_FALSE(parse_target(bad)) << bad;
}

TEST(loadgen_target, header_lines) {
  auto h = parse_header_line("x-sim-tokens:   8 ");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->name, "x-sim-tokens");
  EXPECT_EQ(h->value, "8");
  h = parse_header_line("Authorization: Bearer sk-a:b");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->value, "Bearer sk-a:b");
  EXPECT_FALSE(parse_header_line("no colon"));
  EXPECT_FALSE(parse_header_line(": empty name"));
  EXPECT_FALSE(parse_header_line("bad name: x"));
  EXPECT_FALSE(parse_header_line("x: a\r\nInjected: yes"));
}

TEST(loadgen_options, defaults_need_only_a_target) {
  options o;
  EXPECT_FALSE(validate(o));
  EXPECT_TRUE(validate(valid()));
}

TEST(loadgen_options, rejects_bad_values) {
  auto check = [](auto mutate, const char* what) {
    options o = valid();
    mutate(o);
    EXPECT_FALSE(validate(o)) << what;
  };
  check([](options& o) { o.path = "/v1/embeddings"; }, "path");
  check([](options& o) { o.concurrency = 0; }, "concurrency 0");
  check([](options& o) { o.duration_limit = duration::zero(); }, "duration 0");
  check([](options& o) { o.connect_timeout = duration::zero(); }, "connect timeout 0");
  check([](options& o) { o.ramp = o.duration_limit; }, "ramp >= duration");
  check([](options& o) { o.source_ips = 65535; }, "source-ips past 127.0.255.254");
  check([](options& o) { o.threads = 100000; }, "threads");
  check([](options& o) { o.pid = 1ull << 40; }, "pid");
  check([](options& o) { o.headers = {"nocolon"}; }, "header");
  check([](options& o) { o.read_mode = mode::slow; o.read_size = 0; }, "read size 0");
  check([](options& o) { o.read_mode = mode::abandon; o.abandon_after = 0; }, "abandon after 0");
  check([](options& o) { o.read_mode = mode::abandon; o.stream = false; }, "abandon without stream");
}

TEST(loadgen_options, flags_and_yaml_share_one_table) {
  options o;
  config::option_table table;
  o.register_options(table);
  auto r = table.apply_yaml_text(
      "target: http://127.0.0.1:9\n"
      "concurrency: 250\n"
      "requests: 1000\n"
      "duration: 90s\n"
      "stream: false\n"
      "mode: never-read\n"
      "hold: 2s\n"
      "read-size: 1KiB\n"
      "header: \"x-sim-tokens: 8\"\n"
      "ramp: 500ms\n"
      "source-ips: 16\n");
  ASSERT_TRUE(r) << r.err().message;
  EXPECT_EQ(o.target, "http://127.0.0.1:9");
  EXPECT_EQ(o.concurrency, 250u);
  EXPECT_EQ(o.requests, 1000u);
  EXPECT_EQ(o.duration_limit, std::chrono::seconds(90));
  EXPECT_FALSE(o.stream);
  EXPECT_EQ(o.read_mode, mode::never_read);
  EXPECT_EQ(o.hold, std::chrono::seconds(2));
  EXPECT_EQ(o.read_size, 1024u);
  ASSERT_EQ(o.headers.size(), 1u);
  EXPECT_EQ(o.headers[0], "x-sim-tokens: 8");
  EXPECT_EQ(o.ramp, std::chrono::milliseconds(500));
  EXPECT_EQ(o.source_ips, 16u);
  EXPECT_TRUE(validate(o));

  EXPECT_FALSE(table.apply_yaml_text("mode: sideways\n"));
  EXPECT_FALSE(table.apply_yaml_text("duration: 5\n")) << "a duration needs a unit";
  EXPECT_FALSE(table.apply_yaml_text("no-such-flag: 1\n"));
}

// YAML lists (`header: [a, b]`) go through option_table's sequence branch, which reads a yaml-cpp
// iterator temporary after its lifetime under ASan (src/config/option_table.cpp); repeated flags
// exercise the same list option here.
TEST(loadgen_options, command_line_flags) {
  options o;
  config::option_table table;
  o.register_options(table);
  CLI::App app;
  table.register_cli(app);
  std::vector<std::string> args = {"--target", "http://127.0.0.1:9", "--header", "x-a: 1", "--header",
                                   "Authorization: Bearer k", "--stream=false", "--json", "--mode", "abandon",
                                   "--abandon-after", "4", "--read-delay", "250ms"};
  std::reverse(args.begin(), args.end());  // CLI11 parses a reversed vector
  app.parse(args);
  auto r = table.apply_cli();
  ASSERT_TRUE(r) << r.err().message;
  EXPECT_EQ(o.target, "http://127.0.0.1:9");
  ASSERT_EQ(o.headers.size(), 2u);
  EXPECT_EQ(o.headers[1], "Authorization: Bearer k");
  EXPECT_FALSE(o.stream);
  EXPECT_TRUE(o.json);
  EXPECT_EQ(o.read_mode, mode::abandon);
  EXPECT_EQ(o.abandon_after, 4u);
  EXPECT_EQ(o.read_delay, std::chrono::milliseconds(250));
  EXPECT_FALSE(validate(o)) << "abandon needs streaming";
}

TEST(loadgen_options, modes_round_trip) {
  for (mode m : {mode::normal, mode::slow, mode::never_read, mode::abandon}) {
    auto parsed = parse_mode(to_string(m));
    ASSERT_TRUE(parsed);
    EXPECT_EQ(*parsed, m);
  }
  EXPECT_FALSE(parse_mode("fast"));
}

TEST(loadgen_request, chat_and_completions_bodies) {
  options o = valid();
  o.max_tokens = 16;
  o.headers = {"x-sim-tokens: 8"};
  auto t = parse_target("http://127.0.0.1:8080/base");
  ASSERT_TRUE(t);
  std::string req = detail::build_request(o, *t);
  EXPECT_TRUE(req.starts_with("POST /base/v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n")) << req;
  EXPECT_NE(req.find("\r\nx-sim-tokens: 8\r\n"), std::string::npos);
  const auto body = req.substr(req.find("\r\n\r\n") + 4);
  EXPECT_NE(req.find("Content-Length: " + std::to_string(body.size()) + "\r\n"), std::string::npos);
  EXPECT_NE(body.find("\"messages\":[{\"role\":\"user\""), std::string::npos) << body;
  EXPECT_NE(body.find("\"stream\":true"), std::string::npos);
  EXPECT_NE(body.find("\"max_tokens\":16"), std::string::npos);

  o.path = "/v1/completions";
  o.stream = false;
  o.max_tokens = 0;
  req = detail::build_request(o, *t);
  EXPECT_NE(req.find("\"prompt\":"), std::string::npos);
  EXPECT_NE(req.find("\"stream\":false"), std::string::npos);
  EXPECT_EQ(req.find("max_tokens"), std::string::npos);
}

TEST(loadgen_request, messages_requests_carry_anthropic_version_once) {
  options o = valid();
  o.path = "/v1/messages";
  auto t = parse_target("http://127.0.0.1:8080");
  ASSERT_TRUE(t);
  std::string req = detail::build_request(o, *t);
  EXPECT_NE(req.find("\r\nanthropic-version: 2023-06-01\r\n"), std::string::npos) << req;
  EXPECT_NE(req.find("\"max_tokens\":"), std::string::npos);
  o.headers = {"Anthropic-Version: 2024-01-01"};
  req = detail::build_request(o, *t);
  EXPECT_NE(req.find("\r\nAnthropic-Version: 2024-01-01\r\n"), std::string::npos) << req;
  EXPECT_EQ(req.find("2023-06-01"), std::string::npos) << req;
  o.path = "/v1/chat/completions";
  o.headers = {};
  EXPECT_EQ(detail::build_request(o, *t).find("anthropic-version"), std::string::npos);
}
