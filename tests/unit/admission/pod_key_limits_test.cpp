// pod_key_limits: the client keys' max_streams, rpm and tpm held by a pod's worker processes
// together in shared memory. Two instances (two workers' worth) over one table: the limits hold for
// both, a dead worker's streams go back, a reload's generation shares the rows and sets the rates,
// a process killed inside a row's lock (a real forked child) leaves a count the next lock repairs.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "admission/pod_key_limits.hpp"
#include "runtime/shared_segment.hpp"
#include "test_support.hpp"

using namespace sluice;
using namespace sluice::admission;
using namespace sluice::admission::testing;
using namespace std::chrono_literals;

namespace {

client_keys pod_keys_file(const manual_clock& clock, std::string_view text) {
  auto r = client_keys::parse(text, clock.fn());
  EXPECT_TRUE(r.has_value());
  return std::move(r).value();
}

bool admitted(const key_decision& d) { return std::holds_alternative<key_permit>(d); }

rate_limit_kind refused_for(const key_decision& d) {
  return std::holds_alternative<rate_refusal>(d) ? std::get<rate_refusal>(d).which : rate_limit_kind::unavailable;
}

struct PodKeyLimits : ::testing::Test {
  manual_clock clock;
  runtime::shared_segment<pod_keys> table;
  static constexpr std::string_view text = "sk-capped 2 0 capped\nsk-rated 0 3 rated tpm=100\nsk-free 0 0 free\n";
  result<pod_key_limits> attach(std::size_t row, std::uint32_t generation, std::string_view keys) {
    return pod_key_limits::attach(pod_keys_file(clock, keys), *table, row, generation, clock.fn());
  }
  // Worker row `row` of `generation` with its keys attached (the test fails if it is refused).
  pod_key_limits worker(std::size_t row, std::uint32_t generation = 0, std::string_view keys = text) {
    auto l = attach(row, generation, keys);
    EXPECT_TRUE(l.has_value()) << l.err().message;
    return std::move(l).value();
  }
  static key_handle key(const pod_key_limits& l, std::string_view k) {
    return l.authenticate_header("Bearer " + std::string(k)).value();
  }
};

TEST_F(PodKeyLimits, MaxStreamsHoldsForEveryWorkerTogether) {
  auto a = worker(0);
  auto b = worker(1);
  EXPECT_EQ(a.shared_keys(), 2u) << "the key without limits needs no row";
  EXPECT_EQ(table->used(), 2u) << "both workers share each key's row";
  auto p1 = a.decide(key(a, "sk-capped"), 0);
  auto p2 = b.decide(key(b, "sk-capped"), 0);
  ASSERT_TRUE(admitted(p1) && admitted(p2));
  EXPECT_EQ(refused_for(a.decide(key(a, "sk-capped"), 0)), rate_limit_kind::concurrency);
  EXPECT_EQ(refused_for(b.decide(key(b, "sk-capped"), 0)), rate_limit_kind::concurrency);
  std::get<key_permit>(p2).reset();  // ended in the other worker: this one may take it
  EXPECT_TRUE(admitted(a.decide(key(a, "sk-capped"), 0)));
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(admitted(b.decide(key(b, "sk-free"), 1000)));
}

TEST_F(PodKeyLimits, RpmIsOneBucketForThePodAndItsHeadersSaySo) {
  auto a = worker(0);
  auto b = worker(1);
  auto d1 = a.decide(key(a, "sk-rated"), 10);
  ASSERT_TRUE(admitted(d1));
  EXPECT_EQ(std::get<key_permit>(d1).headers.requests->remaining, 2u);
  ASSERT_TRUE(admitted(b.decide(key(b, "sk-rated"), 10)));
  auto d3 = b.decide(key(b, "sk-rated"), 10);
  ASSERT_TRUE(admitted(d3));
  EXPECT_EQ(std::get<key_permit>(d3).headers.requests->remaining, 0u);
  EXPECT_EQ(std::get<key_permit>(d3).headers.tokens->remaining, 70u);
  auto refused = a.decide(key(a, "sk-rated"), 10);
  EXPECT_EQ(refused_for(refused), rate_limit_kind::rpm) << "three a minute for the pod, not for each worker";
  EXPECT_EQ(std::get<rate_refusal>(refused).retry_after, 20s);
  clock.advance(20s);
  EXPECT_TRUE(admitted(a.decide(key(a, "sk-rated"), 10)));
}

TEST_F(PodKeyLimits, TokensSettleOnTheSharedBucketWhereverThePermitEnds) {
  auto a = worker(0);
  auto b = worker(1);
  auto d = a.decide(key(a, "sk-rated"), 90);
  ASSERT_TRUE(admitted(d));
  EXPECT_EQ(refused_for(b.decide(key(b, "sk-rated"), 20)), rate_limit_kind::tpm) << "10 of 100 tokens left";
  auto& p = std::get<key_permit>(d);
  p.used_tokens(30);
  p.reset();  // 60 of the reservation come back
  auto again = b.decide(key(b, "sk-rated"), 60);
  ASSERT_TRUE(admitted(again));
  EXPECT_EQ(std::get<key_permit>(again).headers.tokens->remaining, 10u);
}

TEST_F(PodKeyLimits, ADeadWorkersStreamsGoBackAndItsLatePermitsChangeNothing) {
  auto a = worker(0);
  auto b = worker(5);
  auto held = b.decide(key(b, "sk-capped"), 0);
  auto held2 = b.decide(key(b, "sk-capped"), 0);
  ASSERT_TRUE(admitted(held) && admitted(held2));
  EXPECT_EQ(refused_for(a.decide(key(a, "sk-capped"), 0)), rate_limit_kind::concurrency);
  table->detach_worker(5);  // the supervisor, once worker row 5's process has ended
  auto p1 = a.decide(key(a, "sk-capped"), 0);
  auto p2 = a.decide(key(a, "sk-capped"), 0);
  ASSERT_TRUE(admitted(p1) && admitted(p2));
  std::get<key_permit>(held).reset();  // (not reachable in a dead process; harmless here)
  EXPECT_EQ(refused_for(a.decide(key(a, "sk-capped"), 0)), rate_limit_kind::concurrency);
  // Once no worker uses them, the rows are free for other keys.
  table->detach_worker(0);
  EXPECT_EQ(table->used(), 0u);
}

TEST_F(PodKeyLimits, ANewGenerationSharesTheRowsTheOldStreamsHoldAndSetsTheRates) {
  auto old_gen = worker(0, 0);
  auto s1 = old_gen.decide(key(old_gen, "sk-capped"), 0);
  ASSERT_TRUE(admitted(s1));
  ASSERT_TRUE(admitted(old_gen.decide(key(old_gen, "sk-rated"), 0)));
  // Reloaded: sk-capped keeps its cap of 2, sk-rated goes from 3 to 10 a minute.
  auto new_gen = worker(1, 1, "sk-capped 2 0 capped\nsk-rated 0 10 rated\n");
  EXPECT_EQ(table->used(), 2u);
  auto s2 = new_gen.decide(key(new_gen, "sk-capped"), 0);
  ASSERT_TRUE(admitted(s2));
  EXPECT_EQ(refused_for(new_gen.decide(key(new_gen, "sk-capped"), 0)), rate_limit_kind::concurrency)
      << "the old generation's stream still counts";
  auto r = new_gen.decide(key(new_gen, "sk-rated"), 0);
  ASSERT_TRUE(admitted(r));
  EXPECT_EQ(std::get<key_permit>(r).headers.requests->limit, 10u);
  EXPECT_EQ(std::get<key_permit>(r).headers.requests->remaining, 1u) << "the rate's use carried over: 2 of 3 used";
  EXPECT_FALSE(std::get<key_permit>(r).headers.tokens) << "tpm is gone from the new config";
  // A replacement of the old generation's worker does not put the old rates back.
  auto late_old = worker(2, 0);
  auto r2 = late_old.decide(key(late_old, "sk-rated"), 0);
  ASSERT_TRUE(admitted(r2)) << "the last request of the shared bucket";
  EXPECT_EQ(std::get<key_permit>(r2).headers.requests->limit, 10u);
  EXPECT_EQ(refused_for(late_old.decide(key(late_old, "sk-rated"), 0)), rate_limit_kind::rpm);
}

TEST_F(PodKeyLimits, AFullTableRefusesTheWorkerThatNeedsAnotherRow) {
  std::string many;
  for (std::size_t i = 0; i < pod_key_rows; ++i) many += "sk-" + std::to_string(i) + " 1 0\n";
  auto a = worker(0, 0, many);
  EXPECT_EQ(table->used(), pod_key_rows);
  auto refused = attach(1, 1, "sk-another 1 0\n");
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.err().message,
            "keys-file: more keys with limits than a pod of --processes holds (4096 across the generations alive; "
            "use --redis)");
  auto foreign = attach(runtime::pod_worker_rows, 1, "sk-free 0 0\n");
  ASSERT_FALSE(foreign.has_value()) << "refused before any key, though no key here needs a row";
  EXPECT_EQ(foreign.err().message, "worker row 64 is not one of the pod's 64");
  auto same = worker(1, 1, "sk-7 3 0\n");  // a key already there takes no row
  EXPECT_EQ(same.shared_keys(), 1u);
}

TEST_F(PodKeyLimits, AProcessKilledInsideARowsLockLeavesACountTheNextLockRepairs) {
  auto a = worker(0);
  auto k = key(a, "sk-capped");
  auto p = a.decide(k, 0);
  ASSERT_TRUE(admitted(p));
  // A child process dies inside the key's row lock with its part raised and the total not yet
  // (the row's mutex and counters are reached as every process maps them).
  const runtime::row_identity id = client_keys::parse("sk-capped 2 0\n").value().digest(0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto* r = table->attach(id, 3, 0, [](pod_key_row&) {}, [](pod_key_row&) {});
    ::pthread_mutex_lock(reinterpret_cast<pthread_mutex_t*>(&r->mu));
    r->data.held[3] += 1;
    std::_Exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_EQ(refused_for(a.decide(k, 0)), rate_limit_kind::concurrency)
      << "the next lock sums the parts: the dead child's stream counts until its row is detached";
  table->detach_worker(3);
  EXPECT_TRUE(admitted(a.decide(k, 0)));
}

}  // namespace
