// router: routing by model, weights and least-outstanding balance, skipping open circuits,
// failed probes, saturated engines, concurrency limits and spent budgets; preferring untried
// upstreams on a retry; what it says when nothing can be picked.
#include <gtest/gtest.h>

#include <map>

#include "routing/router.hpp"

using namespace sluice;
using namespace sluice::routing;
using namespace std::chrono_literals;

namespace {

upstream_spec spec(std::string name, std::vector<std::string> models = {}, std::uint64_t weight = 1) {
  upstream_spec s;
  s.name = std::move(name);
  s.url = "http://127.0.0.1:1";
  s.models = std::move(models);
  s.weight = weight;
  return s;
}

options make(std::vector<upstream_spec> ups) {
  options o;
  o.upstreams = std::move(ups);
  o.circuit_failures = 2;
  o.circuit_open_time = 1s;
  EXPECT_TRUE(o.finish({}, "OPENAI_API_KEY").has_value());
  return o;
}

const std::vector<bool> none_tried;

}  // namespace

TEST(Router, RoutesByModel) {
  auto o = make({spec("a", {"m1"}), spec("b", {"m2", "m3"}), spec("any")});
  router r(o, {}, steady_clock::now());
  auto t = steady_clock::now();
  std::map<std::string, int> seen;
  for (int i = 0; i < 50; ++i) {
    auto p = r.pick("m2", 0, none_tried, t);
    ASSERT_TRUE(p.picked);
    seen[p.picked.upstream().spec.name]++;
  }
  EXPECT_EQ(seen.count("a"), 0u);
  EXPECT_GT(seen["b"], 0);
  EXPECT_GT(seen["any"], 0);
  auto missing = r.pick("nope", 0, none_tried, t);
  EXPECT_TRUE(missing.picked) << "'any' serves every model";
  auto o2 = make({spec("a", {"m1"})});
  router r2(o2, {}, t);
  auto p = r2.pick("nope", 0, none_tried, t);
  EXPECT_FALSE(p.picked);
  EXPECT_EQ(p.why, no_pick::unknown_model);
  EXPECT_FALSE(r2.serves("nope"));
  EXPECT_TRUE(r2.pick("", 0, none_tried, t).picked) << "no model (GET /v1/models): any upstream";
}

TEST(Router, IdleTrafficFollowsTheWeights) {
  auto o = make({spec("heavy", {}, 3), spec("light", {}, 1)});
  router r(o, {}, steady_clock::now());
  auto t = steady_clock::now();
  std::map<std::string, int> seen;
  for (int i = 0; i < 4000; ++i) {
    auto p = r.pick("m", 0, none_tried, t);  // released at once: every pick sees both idle
    seen[p.picked.upstream().spec.name]++;
  }
  double share = seen["heavy"] / 4000.0;
  EXPECT_NEAR(share, 0.75, 0.04);
}

TEST(Router, LoadGoesToTheLeastOutstandingPerWeight) {
  auto o = make({spec("heavy", {}, 2), spec("light", {}, 1)});
  router r(o, {}, steady_clock::now());
  auto t = steady_clock::now();
  std::vector<lease> held;
  for (int i = 0; i < 30; ++i) held.push_back(std::move(r.pick("m", 0, none_tried, t).picked));
  EXPECT_EQ(r.at(0).outstanding.load(), 20u);
  EXPECT_EQ(r.at(1).outstanding.load(), 10u);
  held.clear();
  EXPECT_EQ(r.at(0).outstanding.load(), 0u);
  EXPECT_EQ(r.at(1).outstanding.load(), 0u);
}

TEST(Router, OpenCircuitGetsNoTrafficAndAllOpenIsUnhealthy) {
  auto o = make({spec("a"), spec("b")});
  auto t = steady_clock::now();
  router r(o, {}, t);
  for (int i = 0; i < 2; ++i) {
    bool probe = false;
    ASSERT_TRUE(r.at(0).breaker.try_acquire(t, probe));
    r.at(0).breaker.on_failure(t, probe);
  }
  for (int i = 0; i < 20; ++i) {
    auto p = r.pick("m", 0, none_tried, t);
    ASSERT_TRUE(p.picked);
    EXPECT_EQ(p.picked.index(), 1u);
  }
  EXPECT_TRUE(r.any_healthy(t));
  for (int i = 0; i < 2; ++i) {
    auto p = r.pick("m", 0, none_tried, t);
    p.picked.failed(t);
  }
  EXPECT_FALSE(r.any_healthy(t));
  auto p = r.pick("m", 0, none_tried, t);
  EXPECT_FALSE(p.picked);
  EXPECT_EQ(p.why, no_pick::unhealthy);
  EXPECT_EQ(p.retry_at, t + 1s);
  // Half-open after the open time: one probe goes through, the next waits for its verdict.
  auto probe = r.pick("m", 0, none_tried, t + 1s);
  ASSERT_TRUE(probe.picked);
  EXPECT_TRUE(probe.picked.probe());
  auto second = r.pick("m", 0, none_tried, t + 1s);
  ASSERT_TRUE(second.picked) << "the other upstream is half-open too";
  auto third = r.pick("m", 0, none_tried, t + 1s);
  EXPECT_FALSE(third.picked);
  EXPECT_EQ(third.why, no_pick::busy) << "probes in flight: their verdict is moments away";
  probe.picked.succeeded();
  EXPECT_EQ(r.at(probe.picked.index()).breaker.state(t + 1s), circuit_state::closed);
}

TEST(Router, AbandonedProbeLeaseFreesTheProbeSlot) {
  auto o = make({spec("a")});
  auto t = steady_clock::now();
  router r(o, {}, t);
  for (int i = 0; i < 2; ++i) r.pick("m", 0, none_tried, t).picked.failed(t);
  {
    auto p = r.pick("m", 0, none_tried, t + 1s);
    ASSERT_TRUE(p.picked.probe());
  }  // the client left: no outcome
  EXPECT_TRUE(r.pick("m", 0, none_tried, t + 1s).picked);
}

TEST(Router, RetryPrefersAnUntriedUpstream) {
  auto o = make({spec("a", {}, 100), spec("b", {}, 1)});
  auto t = steady_clock::now();
  router r(o, {}, t);
  std::vector<bool> tried{true, false};
  for (int i = 0; i < 20; ++i) EXPECT_EQ(r.pick("m", 0, tried, t).picked.index(), 1u);
  EXPECT_TRUE(r.has_ready_untried("m", 0, tried, t));
  std::vector<bool> both{true, true};
  EXPECT_TRUE(r.pick("m", 0, both, t).picked) << "all tried: the tried ones again";
  EXPECT_FALSE(r.has_ready_untried("m", 0, both, t));
}

TEST(Router, SpentBudgetHoldsUntilItRefills) {
  auto s = spec("a");
  s.requests_per_minute = 2;
  auto o = make({s});
  auto t = steady_clock::now();
  router r(o, {}, t);
  ASSERT_TRUE(r.pick("m", 0, none_tried, t).picked);
  ASSERT_TRUE(r.pick("m", 0, none_tried, t).picked);
  auto p = r.pick("m", 0, none_tried, t);
  EXPECT_FALSE(p.picked);
  EXPECT_EQ(p.why, no_pick::busy);
  EXPECT_TRUE(p.paced);
  EXPECT_NEAR(std::chrono::duration<double>(p.retry_at - t).count(), 30.0, 0.01);
  EXPECT_TRUE(r.any_healthy(t)) << "paced is not unhealthy";
  EXPECT_TRUE(r.pick("m", 0, none_tried, t + 30s).picked);
}

TEST(Router, PacedUpstreamOverflowsToAnother) {
  auto a = spec("a");
  a.requests_per_minute = 1;
  auto o = make({a, spec("b")});
  auto t = steady_clock::now();
  router r(o, {}, t);
  std::map<std::size_t, int> seen;
  for (int i = 0; i < 10; ++i) seen[r.pick("m", 0, none_tried, t).picked.index()]++;
  EXPECT_LE(seen[0], 1);
  EXPECT_GE(seen[1], 9);
}

TEST(Router, ConcurrencyLimitAndSaturatedEngineHold) {
  auto a = spec("a");
  a.max_concurrent = 1;
  auto o = make({a});
  auto t = steady_clock::now();
  router r(o, {}, t);
  auto first = r.pick("m", 0, none_tried, t);
  ASSERT_TRUE(first.picked);
  auto second = r.pick("m", 0, none_tried, t);
  EXPECT_FALSE(second.picked);
  EXPECT_EQ(second.why, no_pick::busy);
  EXPECT_FALSE(second.paced);
  first = pick_result{};
  ASSERT_TRUE(r.pick("m", 0, none_tried, t).picked);

  r.set_engine(0, true, t);
  auto held = r.pick("m", 0, none_tried, t);
  EXPECT_FALSE(held.picked);
  EXPECT_TRUE(held.engine);
  EXPECT_TRUE(r.engine_holds(r.at(0), t + o.engine_stale_after));
  EXPECT_FALSE(r.engine_holds(r.at(0), t + o.engine_stale_after + 1ms)) << "a stale verdict holds nothing";
  r.set_engine(0, false, t + 1s);
  EXPECT_TRUE(r.pick("m", 0, none_tried, t + 1s).picked);
}

TEST(Router, FailedProbeMakesAnUpstreamUnusable) {
  auto o = make({spec("a"), spec("b")});
  auto t = steady_clock::now();
  router r(o, {}, t);
  r.at(1).probe_ok = false;
  for (int i = 0; i < 10; ++i) EXPECT_EQ(r.pick("m", 0, none_tried, t).picked.index(), 0u);
  r.at(0).probe_ok = false;
  EXPECT_FALSE(r.any_healthy(t));
  EXPECT_EQ(r.pick("m", 0, none_tried, t).why, no_pick::unhealthy);
}

TEST(Router, AuthorizationPerUpstream) {
  auto o = make({spec("a"), spec("b")});
  router r(o, {"Bearer one", ""}, steady_clock::now());
  EXPECT_EQ(r.at(0).authorization, "Bearer one");
  EXPECT_EQ(r.at(1).authorization, "");
}
