// sluice flood --path /v1/responses end to end: against the in-process simulator, directly and
// through the gateway (apart from loadgen_test.cpp, whose local `http` alias clashes with the
// gateway's namespace).
#include <gtest/gtest.h>

#include "app/gateway.hpp"
#include "loadgen/loadgen.hpp"
#include "sim/server.hpp"

using namespace sluice;

// --path /v1/responses against the simulator, directly and through the gateway: streams (text and
// tool calls) and whole answers verify; a cut answer (response.incomplete) and a broken stream fail.
TEST(loadgen_responses, against_the_sim_and_the_gateway) {
  sim::options so;
  so.listen = "127.0.0.1:0";
  so.threads = 2;
  so.tokens = 8;
  sim::server sim(so);
  auto sp = sim.start();
  ASSERT_TRUE(sp.has_value()) << sp.err().message;
  app::serve_options go;
  go.http.listen = "127.0.0.1:0";
  go.http.threads = 2;
  go.upstream.urls = {"http://127.0.0.1:" + std::to_string(sp->port())};
  go.routing.max_attempts = 1;
  auto made = app::gateway::make(go, "sk-test-key");
  ASSERT_TRUE(made.has_value()) << made.err().message;
  app::gateway& gw = **made;
  auto gp = gw.start();
  ASSERT_TRUE(gp.has_value()) << gp.err().message;

  for (std::uint16_t port : {sp->port(), gp->port()}) {
    for (bool stream : {true, false}) {
      for (const char* tool : {"", "x-sim-tool-call: lookup"}) {
        loadgen::options o;
        o.target = "http://127.0.0.1:" + std::to_string(port);
        o.path = "/v1/responses";
        o.stream = stream;
        o.concurrency = 3;
        o.requests = 6;
        o.threads = 1;
        o.progress = false;
        if (*tool) o.headers = {tool};
        auto r = loadgen::run(o);
        ASSERT_TRUE(r) << r.err().message;
        SCOPED_TRACE(std::to_string(port) + (stream ? " stream " : " whole ") + tool);
        EXPECT_EQ(r->ok, 6u) << loadgen::format_text(*r);
        if (stream) {
          EXPECT_EQ(r->chunks, 6u * (*tool ? 1 + 2 + 1 + 3 : 4 + 8 + 4));
        }
        EXPECT_EQ(r->ttft.count, 6u);
      }
    }
  }
  loadgen::options bad;
  bad.target = "http://127.0.0.1:" + std::to_string(sp->port());
  bad.path = "/v1/responses";
  bad.concurrency = 2;
  bad.threads = 1;
  bad.progress = false;
  bad.max_tokens = 3;  // max_output_tokens: the answer ends with response.incomplete
  auto cut_r = loadgen::run(bad);
  ASSERT_TRUE(cut_r);
  const auto& cut = *cut_r;
  EXPECT_EQ(cut.error_events, 2u) << loadgen::format_text(cut);
  bad.max_tokens = 0;
  bad.headers = {"x-sim-fault: reset", "x-sim-fault-after: 2"};
  auto reset_r = loadgen::run(bad);
  ASSERT_TRUE(reset_r);
  const auto& reset = *reset_r;
  EXPECT_EQ(reset.failed, 2u) << loadgen::format_text(reset);
  bad.stream = false;
  bad.headers = {"x-sim-fault: malformed", "x-sim-fault-after: 1"};
  auto half_r = loadgen::run(bad);
  ASSERT_TRUE(half_r);
  const auto& half = *half_r;
  EXPECT_EQ(half.malformed, 2u) << loadgen::format_text(half);
}
