// An in-process simulator or gateway started on 127.0.0.1:0 for one test, with the port it got.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
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
  std::unique_ptr<app::gateway> owned;
  app::gateway& gw;
  std::uint16_t port = 0;
  explicit gateway_box(app::serve_options o, std::string upstream_key = "sk-test-upstream")
      : owned(made(std::move(o), std::move(upstream_key))), gw(*owned) {
    auto p = gw.start();
    EXPECT_TRUE(p.has_value()) << p.err().message;
    if (p) port = p->port();
  }

 private:
  // A config the gateway refuses fails the test that boxes it (the box has no gateway to give).
  static std::unique_ptr<app::gateway> made(app::serve_options o, std::string upstream_key) {
    auto g = app::gateway::make(std::move(o), std::move(upstream_key));
    if (!g) throw std::runtime_error("gateway_box: " + g.err().message);
    return std::move(g).value();
  }
};

}  // namespace sluice::test
