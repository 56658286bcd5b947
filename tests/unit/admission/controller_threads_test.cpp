// Cross-thread controller tests: four io_contexts on four threads hammer one controller, the way the
// worker pool does, in the anonymous lane or spread over a few client keys' lanes. Checked at every
// grant: the cap holds, the completion runs on the waiter's own thread; at the end every slot and
// byte is back and nobody (and no lane) is left in the queue.
#include <gtest/gtest.h>

#include <random>
#include <thread>
#include <vector>

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>

#include "test_support.hpp"

using namespace sluice;
using namespace sluice::admission;
using namespace sluice::admission::testing;
using namespace std::chrono_literals;

namespace {

constexpr int threads = 4;
constexpr int workers_per_thread = 8;
constexpr int acquires_per_thread = 10'000;
constexpr int iterations = acquires_per_thread / workers_per_thread;

struct stress {
  controller* c = nullptr;
  memory_budget* budget = nullptr;
  std::uint64_t max_reserved = 0;
  std::atomic<std::uint64_t> over_cap{0};
  std::atomic<std::uint64_t> over_budget{0};
  std::atomic<std::uint64_t> wrong_thread{0};
  std::atomic<std::uint64_t> admitted{0};
  std::atomic<std::uint64_t> timed_out{0};
  std::atomic<std::uint64_t> cancelled{0};
  std::atomic<std::uint64_t> key_full{0};
  std::atomic<std::uint64_t> other{0};
  std::atomic<std::uint64_t> max_seen{0};
  // Permits the workers hold right now: counted up after a grant, down before the release.
  std::atomic<std::uint64_t> live{0};
  std::atomic<std::uint64_t> max_live{0};
  // With keyed_lanes > 0 each acquire picks one of that many client keys' lanes at random;
  // otherwise every request is in the anonymous lane.
  int keyed_lanes = 0;
  char lane_ids[4] = {};

  queue_lane lane_for(std::mt19937& rng) {
    if (keyed_lanes == 0) return {};
    return {&lane_ids[rng() % static_cast<unsigned>(keyed_lanes)]};
  }

  void on_grant() {
    auto u = c->in_use();
    if (u > c->max_streams()) over_cap.fetch_add(1);
    if (budget->reserved() > max_reserved) over_budget.fetch_add(1);
    auto l = live.fetch_add(1) + 1;
    auto ml = max_live.load();
    while (l > ml && !max_live.compare_exchange_weak(ml, l)) {
    }
    auto seen = max_seen.load();
    while (u > seen && !max_seen.compare_exchange_weak(seen, u)) {
    }
    admitted.fetch_add(1);
  }
};

task<void> yield_n(unsigned n) {
  auto ex = co_await net::this_coro::executor;
  for (unsigned i = 0; i < n; ++i) co_await net::post(ex, use_task);
}

// Acquire, hold for a random number of scheduler turns, release; `iterations` times.
task<void> holder(stress* s, const std::thread::id* home, unsigned seed) {
  std::mt19937 rng(seed);
  for (int i = 0; i < iterations; ++i) {
    auto r = co_await s->c->acquire(1, {}, s->lane_for(rng));
    if (std::this_thread::get_id() != *home) s->wrong_thread.fetch_add(1);
    if (std::holds_alternative<permit>(r)) {
      s->on_grant();
      co_await yield_n(rng() % 4);
      s->live.fetch_sub(1);
    } else if (std::get<refused>(r).why == refusal::queue_timeout) {
      s->timed_out.fetch_add(1);
    } else if (std::get<refused>(r).why == refusal::key_queue_full) {
      s->key_full.fetch_add(1);
    } else {
      s->other.fetch_add(1);
    }
  }
}

// Like holder, but every waiter races a short queue timeout and a "client gone" that fires after a
// random number of turns, so grants race with timeouts and cancellations across threads.
task<void> impatient(stress* s, const std::thread::id* home, unsigned seed) {
  using namespace boost::asio::experimental::awaitable_operators;
  std::mt19937 rng(seed);
  for (int i = 0; i < iterations; ++i) {
    // awaitable_operators flattens the nested variant: permit, refused, or monostate (gone won).
    const queue_lane lane = s->lane_for(rng);
    auto r = co_await (s->c->acquire(1, {}, lane) || yield_n(rng() % 8));
    if (std::this_thread::get_id() != *home) s->wrong_thread.fetch_add(1);
    if (r.index() == 2) {
      s->cancelled.fetch_add(1);
    } else if (r.index() == 0) {
      s->on_grant();
      co_await yield_n(rng() % 4);
      s->live.fetch_sub(1);
    } else if (std::get<1>(r).why == refusal::queue_timeout) {
      s->timed_out.fetch_add(1);
    } else if (std::get<1>(r).why == refusal::cancelled) {
      s->cancelled.fetch_add(1);
    } else if (std::get<1>(r).why == refusal::key_queue_full) {
      s->key_full.fetch_add(1);
    } else {
      s->other.fetch_add(1);
    }
  }
}

using worker_fn = task<void> (*)(stress*, const std::thread::id*, unsigned);

void run_stress(stress& s, worker_fn fn) {
  std::vector<std::unique_ptr<net::io_context>> contexts;
  std::vector<std::thread::id> homes(threads);
  std::atomic<int> failures{0};
  for (int t = 0; t < threads; ++t) {
    contexts.push_back(std::make_unique<net::io_context>(1));
    for (int w = 0; w < workers_per_thread; ++w) {
      net::co_spawn(*contexts.back(), fn(&s, &homes[static_cast<std::size_t>(t)], static_cast<unsigned>(t * 100 + w)),
                    [&failures](std::exception_ptr e) {
                      if (e) failures.fetch_add(1);
                    });
    }
  }
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      homes[static_cast<std::size_t>(t)] = std::this_thread::get_id();
      contexts[static_cast<std::size_t>(t)]->run();
    });
  }
  for (auto& th : pool) th.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace

TEST(ControllerThreads, CapHoldsUnderFourThreads) {
  memory_budget budget(std::uint64_t{1} << 40, 0.9, 0.8, [] { return std::size_t{0}; });
  options o;
  o.max_streams = 5;
  o.queue_depth = threads * workers_per_thread;
  o.queue_timeout = 1h;
  controller c(o, budget);
  stress s;
  s.c = &c;
  s.budget = &budget;
  s.max_reserved = 5;
  run_stress(s, holder);
  EXPECT_EQ(s.admitted.load(), static_cast<std::uint64_t>(threads * workers_per_thread * iterations));
  EXPECT_EQ(s.over_cap.load(), 0u);
  EXPECT_EQ(s.over_budget.load(), 0u);
  EXPECT_EQ(s.wrong_thread.load(), 0u);
  EXPECT_EQ(s.other.load(), 0u);
  EXPECT_GE(s.max_seen.load(), 2u);  // there was real contention
  EXPECT_EQ(c.in_use(), 0u);
  EXPECT_EQ(c.queued(), 0u);
  EXPECT_EQ(budget.reserved(), 0u);
}

TEST(ControllerThreads, MemoryIsTheBindingLimit) {
  // Five slots but bytes for three streams: the budget, not the cap, limits admission.
  memory_budget budget(3, 1.0, 1.0, [] { return std::size_t{0}; });
  options o;
  o.max_streams = 5;
  o.queue_depth = threads * workers_per_thread;
  o.queue_timeout = 1h;
  controller c(o, budget);
  stress s;
  s.c = &c;
  s.budget = &budget;
  s.max_reserved = 3;
  run_stress(s, holder);
  EXPECT_EQ(s.admitted.load(), static_cast<std::uint64_t>(threads * workers_per_thread * iterations));
  EXPECT_EQ(s.over_budget.load(), 0u);
  // in_use may briefly read 4: a release gives the bytes back just before the slot.
  EXPECT_LE(s.max_live.load(), 3u);
  EXPECT_GE(s.max_live.load(), 2u);
  EXPECT_EQ(s.wrong_thread.load(), 0u);
  EXPECT_EQ(c.in_use(), 0u);
  EXPECT_EQ(budget.reserved(), 0u);
}

TEST(ControllerThreads, GrantsRacingTimeoutsAndCancellationsLoseNothing) {
  memory_budget budget(std::uint64_t{1} << 40, 0.9, 0.8, [] { return std::size_t{0}; });
  options o;
  o.max_streams = 3;
  o.queue_depth = threads * workers_per_thread;
  o.queue_timeout = 50us;
  controller c(o, budget);
  stress s;
  s.c = &c;
  s.budget = &budget;
  s.max_reserved = 3;
  run_stress(s, impatient);
  auto total = static_cast<std::uint64_t>(threads * workers_per_thread * iterations);
  EXPECT_EQ(s.admitted.load() + s.timed_out.load() + s.cancelled.load(), total);
  EXPECT_EQ(s.other.load(), 0u);
  EXPECT_EQ(s.over_cap.load(), 0u);
  EXPECT_EQ(s.wrong_thread.load(), 0u);
  EXPECT_GT(s.admitted.load(), 0u);
  EXPECT_GT(s.cancelled.load(), 0u);
  EXPECT_EQ(c.in_use(), 0u);
  EXPECT_EQ(c.queued(), 0u);
  EXPECT_EQ(budget.reserved(), 0u);
}

TEST(ControllerThreads, LanesKeepTheCapAndLoseNothing) {
  // 32 workers over 3 keys' lanes with room for 6 waiters each: grants rotate across lanes, lanes
  // open, empty and move between their waiters' storage on every thread, and some requests find
  // their key's share of the queue taken.
  memory_budget budget(std::uint64_t{1} << 40, 0.9, 0.8, [] { return std::size_t{0}; });
  options o;
  o.max_streams = 5;
  o.queue_depth = threads * workers_per_thread;
  o.queue_per_key = 6;
  o.queue_timeout = 1h;
  controller c(o, budget);
  stress s;
  s.c = &c;
  s.budget = &budget;
  s.max_reserved = 5;
  s.keyed_lanes = 3;
  run_stress(s, holder);
  auto total = static_cast<std::uint64_t>(threads * workers_per_thread * iterations);
  EXPECT_EQ(s.admitted.load() + s.key_full.load(), total);
  EXPECT_EQ(s.other.load(), 0u);
  EXPECT_EQ(s.timed_out.load(), 0u);
  EXPECT_EQ(s.over_cap.load(), 0u);
  EXPECT_EQ(s.wrong_thread.load(), 0u);
  EXPECT_GT(s.admitted.load(), 0u);
  EXPECT_GT(s.key_full.load(), 0u) << "the per-key cap was reached";
  EXPECT_EQ(c.refused_total(refusal::key_queue_full), s.key_full.load());
  EXPECT_EQ(c.in_use(), 0u);
  EXPECT_EQ(c.queued(), 0u);
  EXPECT_EQ(c.lanes(), 0u);
  EXPECT_EQ(budget.reserved(), 0u);
}

TEST(ControllerThreads, LanesWithGrantsRacingTimeoutsAndCancellationsLoseNothing) {
  memory_budget budget(std::uint64_t{1} << 40, 0.9, 0.8, [] { return std::size_t{0}; });
  options o;
  o.max_streams = 3;
  o.queue_depth = threads * workers_per_thread;
  o.queue_per_key = 8;
  o.queue_timeout = 50us;
  controller c(o, budget);
  stress s;
  s.c = &c;
  s.budget = &budget;
  s.max_reserved = 3;
  s.keyed_lanes = 4;
  run_stress(s, impatient);
  auto total = static_cast<std::uint64_t>(threads * workers_per_thread * iterations);
  EXPECT_EQ(s.admitted.load() + s.timed_out.load() + s.cancelled.load() + s.key_full.load(), total);
  EXPECT_EQ(s.other.load(), 0u);
  EXPECT_EQ(s.over_cap.load(), 0u);
  EXPECT_EQ(s.wrong_thread.load(), 0u);
  EXPECT_GT(s.admitted.load(), 0u);
  EXPECT_GT(s.cancelled.load(), 0u);
  EXPECT_EQ(c.in_use(), 0u);
  EXPECT_EQ(c.queued(), 0u);
  EXPECT_EQ(c.lanes(), 0u);
  EXPECT_EQ(budget.reserved(), 0u);
}
