// One `sluice serve` child process of a multi-process test (a fleet replica, a front, a worker):
// started with a planted upstream key, its port learned from its output, its metrics and log lines
// readable. Every read first drains its output pipe: a child whose pipe fills up blocks. Test-only.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "process.hpp"
#include "test_client.hpp"

namespace sluice::test {

struct serve_node {
  child_process p;
  std::uint16_t port = 0;
  explicit serve_node(std::vector<std::string> args) : serve_node(std::move(args), {"OPENAI_API_KEY=sk-upstream-test"}) {}
  // With exactly `env` added to the environment (no planted upstream key unless it says so).
  serve_node(std::vector<std::string> args, std::vector<std::string> env) : p(std::move(args), std::move(env)) {
    port = p.wait_port().value_or(0);
    EXPECT_NE(port, 0) << p.output();
  }
  // One series' value from /metrics ("" labels: the first series of the name), or -1.
  double metric(const std::string& series) {
    p.pump(0);
    const std::string text = call(port, bhttp::verb::get, "/metrics").body();
    const auto at = text.find("\n" + series + " ");
    if (at == std::string::npos) return -1;
    return std::stod(text.substr(at + series.size() + 2));
  }
  // The sum of every series of metric `name` (0 when it has none).
  double metric_sum(const std::string& name) {
    p.pump(0);
    const std::string text = call(port, bhttp::verb::get, "/metrics").body();
    double sum = 0;
    for (auto at = text.find("\n" + name + "{"); at != std::string::npos; at = text.find("\n" + name + "{", at + 1)) {
      const auto sp = text.find("} ", at);
      if (sp != std::string::npos) sum += std::stod(text.substr(sp + 2));
    }
    return sum;
  }
  bool logged(const std::string& msg) {
    p.pump(5);
    return p.output().find(msg) != std::string::npos;
  }
};

}  // namespace sluice::test
