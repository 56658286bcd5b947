// jobs::reap_gate: a process judges others' lapsed job leases only after it has itself reached
// Redis for a whole worker-loss-timeout without a miss (a Redis outage lapses every lease at once).
#include "jobs/reap_gate.hpp"

#include <gtest/gtest.h>

using namespace sluice;
using namespace std::chrono_literals;

TEST(ReapGate, OpensOnlyAfterAWholeTimeoutOfHeartbeatsReachingRedis) {
  jobs::reap_gate g(3s);
  const auto t0 = jobs::reap_gate::clock::time_point{} + 100s;
  EXPECT_FALSE(g.open(t0)) << "a process that just started has not heard Redis yet";
  g.heard(true, t0);
  EXPECT_FALSE(g.open(t0 + 1s));
  g.heard(true, t0 + 1s);
  g.heard(true, t0 + 2s);
  EXPECT_FALSE(g.open(t0 + 2999ms));
  EXPECT_TRUE(g.open(t0 + 3s));
}

TEST(ReapGate, AMissedHeartbeatClosesItUntilAnotherWholeTimeoutPassed) {
  jobs::reap_gate g(3s);
  const auto t0 = jobs::reap_gate::clock::time_point{} + 100s;
  g.heard(true, t0);
  EXPECT_TRUE(g.open(t0 + 10s));
  g.heard(false, t0 + 11s);  // Redis away: every lease may lapse meanwhile, this process's too
  EXPECT_FALSE(g.open(t0 + 20s));
  g.heard(true, t0 + 30s);  // back: live processes renew within the next timeout
  EXPECT_FALSE(g.open(t0 + 32s));
  g.heard(true, t0 + 31s);
  EXPECT_TRUE(g.open(t0 + 33s));
}
