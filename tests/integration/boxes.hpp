// An in-process simulator or gateway started on 127.0.0.1:0 for one test, with the port it got.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "app/gateway.hpp"
#include "sim/server.hpp"

namespace sluice::test {

struct sim_box {
  sim::server server;
  std::uint16_t port = 0;
  explicit sim_box(sim::options o) : server(std::move(o)) {
    auto p = server.start();
    EXPECT_TRUE(p.has_value()) << p.err().message;
    if (p) port = p->port();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }
};

struct gateway_box {
  app::gateway gw;
  std::uint16_t port = 0;
  explicit gateway_box(app::serve_options o, std::string upstream_key = "sk-test-upstream") : gw(std::move(o), std::move(upstream_key)) {
    auto p = gw.start();
    EXPECT_TRUE(p.has_value()) << p.err().message;
    if (p) port = p->port();
  }
};

}  // namespace sluice::test
