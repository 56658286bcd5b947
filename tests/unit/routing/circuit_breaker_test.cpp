// circuit_breaker on a manual clock: opening by consecutive failures and by error rate, the single
// half-open probe, closing on its success, re-opening for longer on its failure.
#include <gtest/gtest.h>

#include <string>

#include "routing/circuit_breaker.hpp"
#include "runtime/shared_segment.hpp"

using namespace sluice;
using namespace sluice::routing;
using namespace std::chrono_literals;

namespace {

// Worker row `w` of `generation` attached to `id`'s circuit row (the test fails if it is refused).
pod_circuit_seat seat(const runtime::row_identity& id, pod_circuits& table, std::size_t w, std::uint32_t generation) {
  auto s = attach_pod_circuit(id, table, w, generation);
  EXPECT_TRUE(s.has_value()) << s.err().message;
  return s.value();
}

circuit_settings settings() {
  circuit_settings s;
  s.failures = 3;
  s.error_rate = 0.5;
  s.window = 10;
  s.min_volume = 6;
  s.open_time = 1s;
  s.open_time_max = 3s;
  return s;
}

void fail(circuit_breaker& b, time_point now, int n) {
  for (int i = 0; i < n; ++i) {
    bool probe = false;
    ASSERT_TRUE(b.try_acquire(now, probe));
    EXPECT_FALSE(probe);
    b.on_failure(now, probe);
  }
}

void succeed(circuit_breaker& b, time_point now, int n) {
  for (int i = 0; i < n; ++i) {
    bool probe = false;
    ASSERT_TRUE(b.try_acquire(now, probe));
    b.on_success(probe);
  }
}

}  // namespace

TEST(CircuitBreaker, ConsecutiveFailuresOpenIt) {
  circuit_breaker b(settings());
  const auto t0 = steady_clock::now();
  fail(b, t0, 2);
  EXPECT_EQ(b.state(t0), circuit_state::closed);
  succeed(b, t0, 1);  // a success resets the run
  fail(b, t0, 2);
  EXPECT_EQ(b.state(t0), circuit_state::closed);
  fail(b, t0, 1);
  EXPECT_EQ(b.state(t0), circuit_state::open);
  EXPECT_FALSE(b.available(t0));
  bool probe = false;
  EXPECT_FALSE(b.try_acquire(t0 + 999ms, probe));
  EXPECT_EQ(b.times_opened(), 1u);
}

TEST(CircuitBreaker, ErrorRateOverTheWindowOpensIt) {
  circuit_breaker b(settings());
  const auto t0 = steady_clock::now();
  // Alternating: never 3 in a row, but half of the window fails once min_volume is reached.
  for (int i = 0; i < 2; ++i) {
    fail(b, t0, 1);
    succeed(b, t0, 1);
  }
  EXPECT_EQ(b.state(t0), circuit_state::closed);  // 4 outcomes < min volume 6
  fail(b, t0, 1);
  succeed(b, t0, 1);  // 6 outcomes, 3 failures: 50% -> but the success came last
  EXPECT_EQ(b.state(t0), circuit_state::closed);  // a success does not trip it
  fail(b, t0, 1);  // 7 outcomes, 4 failures
  EXPECT_EQ(b.state(t0), circuit_state::open);
}

TEST(CircuitBreaker, ErrorRateZeroDisablesTheRateRule) {
  auto s = settings();
  s.error_rate = 0;
  circuit_breaker b(s);
  const auto t0 = steady_clock::now();
  for (int i = 0; i < 20; ++i) {
    fail(b, t0, 2);
    succeed(b, t0, 1);
  }
  EXPECT_EQ(b.state(t0), circuit_state::closed);
}

TEST(CircuitBreaker, HalfOpenLetsOneProbeAndClosesOnSuccess) {
  circuit_breaker b(settings());
  const auto t0 = steady_clock::now();
  fail(b, t0, 3);
  const auto t1 = t0 + 1s;
  EXPECT_EQ(b.state(t1), circuit_state::half_open);
  EXPECT_TRUE(b.available(t1));
  bool probe = false;
  ASSERT_TRUE(b.try_acquire(t1, probe));
  EXPECT_TRUE(probe);
  bool second = false;
  EXPECT_FALSE(b.try_acquire(t1, second)) << "only one probe at a time";
  EXPECT_FALSE(b.available(t1));
  b.on_success(true);
  EXPECT_EQ(b.state(t1), circuit_state::closed);
  // Closed again with a clean slate: two failures do not re-open it.
  fail(b, t1, 2);
  EXPECT_EQ(b.state(t1), circuit_state::closed);
}

TEST(CircuitBreaker, FailedProbeReopensForLongerUpToTheMax) {
  circuit_breaker b(settings());
  auto t = steady_clock::now();
  fail(b, t, 3);  // open for 1s
  t += 1s;
  bool probe = false;
  ASSERT_TRUE(b.try_acquire(t, probe));
  b.on_failure(t, probe);  // open for 2s
  EXPECT_EQ(b.state(t + 1999ms), circuit_state::open);
  EXPECT_EQ(b.state(t + 2s), circuit_state::half_open);
  t += 2s;
  ASSERT_TRUE(b.try_acquire(t, probe));
  b.on_failure(t, probe);  // 4s capped to 3s
  EXPECT_EQ(b.state(t + 2999ms), circuit_state::open);
  EXPECT_EQ(b.state(t + 3s), circuit_state::half_open);
  t += 3s;
  ASSERT_TRUE(b.try_acquire(t, probe));
  b.on_success(probe);
  EXPECT_EQ(b.state(t), circuit_state::closed);
  fail(b, t, 3);  // after closing, the open time starts from the base again
  EXPECT_EQ(b.state(t + 1s), circuit_state::half_open);
  EXPECT_EQ(b.times_opened(), 4u);
}

TEST(CircuitBreaker, AbandonedProbeFreesTheSlot) {
  circuit_breaker b(settings());
  const auto t0 = steady_clock::now();
  fail(b, t0, 3);
  bool probe = false;
  ASSERT_TRUE(b.try_acquire(t0 + 1s, probe));
  b.release_probe();
  EXPECT_TRUE(b.try_acquire(t0 + 1s, probe));
  EXPECT_TRUE(probe);
}

TEST(CircuitBreaker, LateFailuresOfRequestsSentBeforeItOpenedDoNotExtendIt) {
  circuit_breaker b(settings());
  const auto t0 = steady_clock::now();
  fail(b, t0, 3);
  b.on_failure(t0 + 900ms, false);  // an old in-flight request failing now
  EXPECT_EQ(b.state(t0 + 1s), circuit_state::half_open);
}

// A pod's worker processes (two breakers over one shared table): one circuit for the pod.
TEST(PodCircuit, FailuresSeenByAnyWorkerOpenItForAllAndTheProbeIsThePodsOne) {
  runtime::shared_segment<pod_circuits> table;
  const auto id = runtime::identity_of("up\nhttp://127.0.0.1:9");
  circuit_breaker a(settings(), seat(id, *table, 0, 0)), b(settings(), seat(id, *table, 4, 0));
  EXPECT_EQ(table->used(), 1u);
  const auto t0 = steady_clock::now();
  fail(a, t0, 2);
  fail(b, t0, 1);  // the third in a row, seen by another process
  EXPECT_EQ(a.state(t0), circuit_state::open);
  EXPECT_EQ(b.state(t0), circuit_state::open);
  EXPECT_EQ(a.times_opened() + b.times_opened(), 1u) << "counted once, by the process whose failure opened it";
  bool probe = false;
  ASSERT_TRUE(b.try_acquire(t0 + 1s, probe));
  EXPECT_TRUE(probe);
  EXPECT_FALSE(a.try_acquire(t0 + 1s, probe)) << "the pod's one probe is in flight";
  // Worker 4 dies with the probe: the supervisor gives it back, another worker probes.
  table->detach_worker(4);
  ASSERT_TRUE(a.try_acquire(t0 + 1s, probe));
  ASSERT_TRUE(probe);
  a.on_success(probe);
  EXPECT_EQ(b.state(t0 + 1s), circuit_state::closed);
}

TEST(PodCircuit, AWorkerOfAnotherUpstreamOrAChangedWindowStartsClean) {
  runtime::shared_segment<pod_circuits> table;
  circuit_breaker a(settings(), seat(runtime::identity_of("a"), *table, 0, 0));
  circuit_breaker other(settings(), seat(runtime::identity_of("b"), *table, 0, 0));
  EXPECT_EQ(table->used(), 2u);
  const auto t0 = steady_clock::now();
  fail(a, t0, 2);
  succeed(a, t0, 1);
  auto wider = settings();
  wider.failures = 100;
  wider.window = 4;  // a reload's window: the ring starts again
  wider.min_volume = 4;
  circuit_breaker reloaded(wider, seat(runtime::identity_of("a"), *table, 1, 1));
  fail(reloaded, t0, 3);
  EXPECT_EQ(reloaded.state(t0), circuit_state::closed) << "3 outcomes in the new window: below its min volume";
  fail(reloaded, t0, 1);
  EXPECT_EQ(reloaded.state(t0), circuit_state::open);
  EXPECT_EQ(other.state(t0), circuit_state::closed);
}

// A worker row out of range, or a table whose rows are all taken, is an error the worker's start
// returns, naming why; a row already there is shared without a new one.
TEST(PodCircuit, AFullTableOrAForeignWorkerRowIsRefusedAsAnError) {
  runtime::shared_segment<pod_circuits> table;
  auto foreign = attach_pod_circuit(runtime::identity_of("a"), *table, runtime::pod_worker_rows, 0);
  ASSERT_FALSE(foreign.has_value());
  EXPECT_EQ(foreign.err().message, "worker row 64 is not one of the pod's 64");
  for (std::size_t i = 0; i < pod_circuit_rows; ++i)
    ASSERT_TRUE(attach_pod_circuit(runtime::identity_of("up" + std::to_string(i)), *table, 0, 0).has_value());
  auto full = attach_pod_circuit(runtime::identity_of("one more"), *table, 1, 1);
  ASSERT_FALSE(full.has_value());
  EXPECT_EQ(full.err().message, "more upstreams than a pod of --processes holds (256 across the generations alive)");
  EXPECT_TRUE(attach_pod_circuit(runtime::identity_of("up7"), *table, 1, 1).has_value()) << "a row already there";
  EXPECT_EQ(table->used(), pod_circuit_rows);
}
