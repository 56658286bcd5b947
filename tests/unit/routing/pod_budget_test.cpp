// pod_budget: an upstream's paced budget and max-concurrent held by a pod's worker processes
// together in shared memory: two instances (two workers' worth) over one table.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>

#include <memory>
#include <string>
#include <vector>

#include "routing/pod_budget.hpp"
#include "runtime/shared_segment.hpp"

using namespace sluice;
using namespace sluice::routing;
using namespace std::chrono_literals;

namespace {

upstream_spec budget_spec(std::uint64_t rpm, std::uint64_t tpm, std::uint64_t max_concurrent) {
  upstream_spec s;
  s.name = "up";
  s.url = "http://127.0.0.1:9";
  s.requests_per_minute = rpm;
  s.tokens_per_minute = tpm;
  s.max_concurrent = max_concurrent;
  return s;
}

// Worker row `w` of `generation` attached to the upstream's row (the test fails if it is refused).
std::unique_ptr<pod_budget> attached(const upstream_spec& spec, time_point now, pod_budgets& table, std::size_t w,
                                     std::uint32_t generation) {
  auto b = pod_budget::attach(spec, now, table, w, generation);
  EXPECT_TRUE(b.has_value()) << b.err().message;
  return std::move(b).value();
}

std::optional<duration> confirmed(pod_budget& b, std::uint64_t tokens, budget_ticket& t) {
  net::io_context ctx;
  std::optional<std::optional<duration>> out;
  net::co_spawn(ctx, b.confirm(tokens, t), [&](std::exception_ptr, std::optional<duration> w) { out = w; });
  ctx.run();
  return *out;
}

TEST(PodBudget, TheRequestBudgetIsOneForThePod) {
  runtime::shared_segment<pod_budgets> table;
  const auto t = steady_clock::now();
  const auto spec = budget_spec(4, 0, 0);
  auto a_owned = attached(spec, t, *table, 0, 0);
  pod_budget& a = *a_owned;
  auto b_owned = attached(spec, t, *table, 1, 0);
  pod_budget& b = *b_owned;
  EXPECT_EQ(table->used(), 1u);
  EXPECT_FALSE(a.try_reserve(0, t));
  EXPECT_FALSE(b.try_reserve(0, t));
  EXPECT_FALSE(a.try_reserve(0, t));
  EXPECT_FALSE(b.try_reserve(0, t));
  auto wait = a.try_reserve(0, t);
  ASSERT_TRUE(wait) << "four a minute for the pod, not for each worker";
  EXPECT_NEAR(std::chrono::duration<double>(*wait).count(), 15.0, 0.01);
  b.refund(0, t);  // a request that never reached the upstream
  EXPECT_FALSE(a.try_reserve(0, t));
}

TEST(PodBudget, WhatOneWorkerLearnsFromTheUpstreamPacesTheOthers) {
  runtime::shared_segment<pod_budgets> table;
  const auto t = steady_clock::now();
  const auto spec = budget_spec(0, 0, 0);
  auto a_owned = attached(spec, t, *table, 0, 0);
  pod_budget& a = *a_owned;
  auto b_owned = attached(spec, t, *table, 1, 0);
  pod_budget& b = *b_owned;
  EXPECT_FALSE(b.has_token_budget());
  ratelimit_headers h;
  h.limit_tokens = 1000;
  h.remaining_tokens = 100;
  h.retry_after = 2s;
  a.observe(h, t);
  EXPECT_TRUE(b.has_token_budget());
  auto w = b.wait_time(50, t);
  ASSERT_TRUE(w) << "a 429's retry-after holds every worker";
  EXPECT_NEAR(std::chrono::duration<double>(*w).count(), 2.0, 0.01);
  EXPECT_EQ(b.snapshot(t + 2s).tokens_limit, 1000);
}

TEST(PodBudget, MaxConcurrentIsConfirmedAgainstThePodsCountAndADeadWorkersPartGoesBack) {
  runtime::shared_segment<pod_budgets> table;
  const auto t = steady_clock::now();
  const auto spec = budget_spec(0, 0, 2);
  auto a_owned = attached(spec, t, *table, 0, 0);
  pod_budget& a = *a_owned;
  auto b_owned = attached(spec, t, *table, 7, 0);
  pod_budget& b = *b_owned;
  EXPECT_TRUE(a.shared()) << "a pick needs the pod's count";
  budget_ticket t1, t2, t3;
  EXPECT_FALSE(confirmed(a, 0, t1));
  EXPECT_FALSE(confirmed(b, 0, t2));
  EXPECT_TRUE(confirmed(a, 0, t3)) << "two in flight in the pod";
  EXPECT_EQ(a.in_flight(), 2u);
  a.release(t1);
  EXPECT_EQ(b.in_flight(), 1u);
  table->detach_worker(7);  // worker 7's process ended with its request in flight
  EXPECT_EQ(a.in_flight(), 0u);
  b.release(t2);  // (a late end changes nothing)
  EXPECT_EQ(a.in_flight(), 0u);
  EXPECT_FALSE(attached(budget_spec(0, 0, 0), t, *table, 0, 0)->shared());
}

TEST(PodBudget, AReloadThatChangesTheLimitsStartsTheBucketAgainAndOneThatDoesNotKeepsIt) {
  runtime::shared_segment<pod_budgets> table;
  const auto t = steady_clock::now();
  auto old_gen_owned = attached(budget_spec(2, 0, 0), t, *table, 0, 0);
  pod_budget& old_gen = *old_gen_owned;
  EXPECT_FALSE(old_gen.try_reserve(0, t));
  EXPECT_FALSE(old_gen.try_reserve(0, t));
  auto same_owned = attached(budget_spec(2, 0, 0), t, *table, 1, 1);
  pod_budget& same = *same_owned;
  EXPECT_TRUE(same.try_reserve(0, t)) << "the same limits: the spent bucket stays spent";
  auto raised_owned = attached(budget_spec(10, 0, 0), t, *table, 2, 2);
  pod_budget& raised = *raised_owned;
  EXPECT_FALSE(raised.try_reserve(0, t));
  EXPECT_EQ(old_gen.snapshot(t).requests_limit, 10) << "the newest generation's limits, for every worker";
  EXPECT_EQ(table->used(), 1u);
}

}  // namespace

TEST(PodBudget, AFullTableOrAForeignWorkerRowIsRefusedAsAnError) {
  runtime::shared_segment<pod_budgets> table;
  const auto t = steady_clock::now();
  auto foreign = pod_budget::attach(budget_spec(1, 0, 0), t, *table, runtime::pod_worker_rows, 0);
  ASSERT_FALSE(foreign.has_value());
  EXPECT_EQ(foreign.err().message, "worker row 64 is not one of the pod's 64");
  std::vector<std::unique_ptr<pod_budget>> held;
  for (std::size_t i = 0; i < pod_budget_rows; ++i) {
    auto spec = budget_spec(1, 0, 0);
    spec.name = "up" + std::to_string(i);
    held.push_back(attached(spec, t, *table, 0, 0));
  }
  auto full = pod_budget::attach(budget_spec(1, 0, 0), t, *table, 1, 1);
  ASSERT_FALSE(full.has_value()) << "\"up\" at that URL has no row yet";
  EXPECT_EQ(full.err().message, "more upstreams than a pod of --processes holds (256 across the generations alive)");
}
