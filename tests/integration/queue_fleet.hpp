// The fixture of the --queue redis tests: one real redis-server (a free loopback port) and the
// simulator, with fronts and workers started as separate `sluice serve` processes against them.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "redis_server.hpp"
#include "serve_node.hpp"
#include "sim/server.hpp"

namespace sluice::test {

struct queue_fleet : ::testing::Test {
  using node = serve_node;
  std::unique_ptr<sim::server> sim;
  std::unique_ptr<test::redis_server> redis;
  void SetUp() override {
    redis = std::make_unique<test::redis_server>();
    ASSERT_TRUE(redis->running());
    sim::options so;
    so.listen = "127.0.0.1:0";
    so.threads = 1;
    so.tokens = 12;
    sim = std::make_unique<sim::server>(so);
    ASSERT_TRUE(sim->start().has_value());
  }
  std::vector<std::string> args(const std::string& role, std::vector<std::string> more = {}) const {
    std::vector<std::string> a{"serve", "--listen", "127.0.0.1:0", "--threads", "2", "--upstream",
                               "http://127.0.0.1:" + std::to_string(sim->port()), "--redis",
                               "redis://127.0.0.1:" + std::to_string(redis->port()), "--queue", "redis", "--role", role,
                               "--log-format", "json", "--max-attempts", "1"};
    // A loaded machine (ASan, CI) can be slower than the 50 ms default.
    if (std::find(more.begin(), more.end(), "--redis-command-timeout") == more.end())
      a.insert(a.end(), {"--redis-command-timeout", "1s"});
    a.insert(a.end(), more.begin(), more.end());
    return a;
  }
  std::unique_ptr<node> front(std::vector<std::string> more = {}) { return std::make_unique<node>(args("front", std::move(more))); }
  std::unique_ptr<node> worker(std::vector<std::string> more = {}) { return std::make_unique<node>(args("worker", std::move(more))); }

  // redis-cli against the test's server: the output, trimmed.
  std::string redis_cli(const std::string& command) const {
    const std::string cmd = "redis-cli -p " + std::to_string(redis->port()) + " " + command + " 2>&1";
    std::string out;
    if (FILE* f = ::popen(cmd.c_str(), "r")) {
      char buf[4096];
      std::size_t n;
      while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
      ::pclose(f);
    }
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out;
  }
};

}  // namespace sluice::test
