// routing::shared_budget while Redis cannot decide (no client attached: every confirm() fails as
// disconnected): `local` confirms against this replica's share of each limit, `closed` refuses for
// a second; what a lease's ticket holds is given back at its end. The Redis path runs against a
// real redis-server in tests/integration/fleet_limits_test.cpp (FleetUpstream).
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>

#include "redis/availability.hpp"
#include "redis/leases.hpp"
#include "routing/shared_budget.hpp"

using namespace sluice;
using namespace sluice::routing;
using namespace std::chrono_literals;

namespace {

redis::options options_with(redis::failure_mode mode, std::uint64_t replicas) {
  redis::options o;
  o.on_failure = mode;
  o.fallback_replicas = replicas;
  return o;
}

struct fixture {
  fixture(redis::failure_mode mode, std::uint64_t replicas) : opts(options_with(mode, replicas)) {}
  redis::options opts;
  redis::availability availability{opts.on_failure, "redis://test"};
  redis::lease_keeper leases{"test", 30s};
  shared_budget_context ctx{opts, availability, leases};
};

// One pick as the router and the attempt loop make it: reserve on the view, then confirm.
std::optional<duration> pick(shared_budget& b, std::uint64_t tokens, budget_ticket& t) {
  if (auto wait = b.try_reserve(tokens, std::chrono::steady_clock::now())) return wait;
  net::io_context io;
  std::optional<duration> out = 1h;
  net::co_spawn(io, b.confirm(tokens, t), [&](std::exception_ptr e, std::optional<duration> w) {
    EXPECT_FALSE(e);
    out = w;
  });
  io.run();
  return out;
}

upstream_spec spec(std::uint64_t rpm, std::uint64_t tpm, std::uint64_t max_concurrent) {
  upstream_spec s;
  s.name = "up";
  s.url = "http://127.0.0.1:1";
  s.requests_per_minute = rpm;
  s.tokens_per_minute = tpm;
  s.max_concurrent = max_concurrent;
  return s;
}

}  // namespace

TEST(SharedBudget, WithoutRedisLocalModeSpendsOnlyThisReplicasShare) {
  fixture f(redis::failure_mode::local, 3);
  auto s = spec(30, 0, 0);
  shared_budget b(s, std::chrono::steady_clock::now(), f.ctx);
  int ok = 0;
  std::vector<budget_ticket> held(15);
  for (auto& t : held) ok += pick(b, 1, t) ? 0 : 1;
  EXPECT_EQ(ok, 10);  // 30 a minute over 3 replicas
  EXPECT_TRUE(f.availability.degraded());
  EXPECT_EQ(f.availability.fallbacks(redis::shared_limit::upstream), 15u);
  // A refused confirm gave its reservation back to the view: the view still has 30 - 10.
  EXPECT_NEAR(b.snapshot(std::chrono::steady_clock::now()).requests_available, 20.0, 0.1);
}

TEST(SharedBudget, WithoutRedisClosedModeWaitsASecondAndHoldsNothing) {
  fixture f(redis::failure_mode::closed, 1);
  auto s = spec(30, 1000, 0);
  shared_budget b(s, std::chrono::steady_clock::now(), f.ctx);
  budget_ticket t;
  auto wait = pick(b, 100, t);
  ASSERT_TRUE(wait);
  EXPECT_EQ(*wait, duration(1s));
  EXPECT_FALSE(t.in_redis || t.in_share);
  const auto snap = b.snapshot(std::chrono::steady_clock::now());
  EXPECT_NEAR(snap.requests_available, 30.0, 0.1);
  EXPECT_NEAR(snap.tokens_available, 1000.0, 1.0);
}

TEST(SharedBudget, TheShareOfConcurrencySlotsFreesWhenALeaseEnds) {
  fixture f(redis::failure_mode::local, 2);
  auto s = spec(0, 0, 3);  // 3 at once for the fleet: 2 for this replica alone
  shared_budget b(s, std::chrono::steady_clock::now(), f.ctx);
  budget_ticket a, c, d;
  EXPECT_FALSE(pick(b, 1, a));
  EXPECT_FALSE(pick(b, 1, c));
  auto wait = pick(b, 1, d);
  ASSERT_TRUE(wait);
  EXPECT_LE(*wait, duration(100ms));  // polls for a slot
  EXPECT_TRUE(a.share_slot);
  b.release(a);
  EXPECT_FALSE(a.share_slot);  // the ticket is spent
  EXPECT_FALSE(pick(b, 1, d));
}

TEST(SharedBudget, ARequestThatNeverReachedTheUpstreamGivesItsShareBack) {
  fixture f(redis::failure_mode::local, 1);
  auto s = spec(2, 0, 0);
  shared_budget b(s, std::chrono::steady_clock::now(), f.ctx);
  budget_ticket a, c, d;
  EXPECT_FALSE(pick(b, 1, a));
  EXPECT_FALSE(pick(b, 1, c));
  EXPECT_TRUE(pick(b, 1, d));
  // a's connect failed (lease::refund): the view gets its request back at once, the share with
  // the lease's end.
  b.refund(1, std::chrono::steady_clock::now());
  a.requests_back = 1;
  b.release(a);
  EXPECT_FALSE(pick(b, 1, d));
}
