// Single-threaded tests of the controller's lanes (fair share across client keys): the per-key cap
// on waiters (key_queue_full), round-robin grants across lanes and FIFO within one, the anonymous
// lane (no keys: today's one FIFO queue, no per-key cap), lanes emptied by a withdrawal, a timeout
// or the drain, and the sluice_queue_lanes gauge.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "admission/metrics.hpp"
#include "test_support.hpp"

using namespace sluice;
using namespace sluice::admission;
using namespace sluice::admission::testing;
using namespace std::chrono_literals;

namespace {

constexpr std::uint64_t big_budget = std::uint64_t{1} << 40;

struct lanes_test : ::testing::Test {
  net::io_context ctx;
  fake_rss rss;
  memory_budget budget{big_budget, 0.9, 0.8, rss.fn()};
  // Their addresses are the lanes of client keys A, B, C and D (as the pipeline passes a key's).
  const char keys[4] = {};
  const queue_lane key_a{&keys[0]}, key_b{&keys[1]}, key_c{&keys[2]}, key_d{&keys[3]};

  options opts(std::uint64_t max_streams, std::uint64_t depth, std::uint64_t per_key, duration timeout = 1h) {
    options o;
    o.max_streams = max_streams;
    o.queue_depth = depth;
    o.queue_per_key = per_key;
    o.queue_timeout = timeout;
    return o;
  }
  void run_until(const std::shared_ptr<outcome>& out) {
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!out->done() && std::chrono::steady_clock::now() < deadline) {
      ctx.restart();
      ctx.run_one_for(10ms);
    }
  }
  void poll() {
    ctx.restart();
    ctx.poll();
  }
  // Declared right after a test's controller: at the end of the test, or when an ASSERT ends it
  // early, the waiters still queued finish (draining) before the controller goes.
  struct drain_at_exit {
    lanes_test& t;
    controller& c;
    ~drain_at_exit() {
      c.set_draining(true);
      t.poll();
    }
  };
};

// Acquires in `lane`, records `label` when admitted, then holds the permit until `held` is cleared.
task<void> labelled_waiter(controller* c, queue_lane lane, std::string label,
                           std::shared_ptr<std::vector<std::string>> order, std::shared_ptr<std::vector<permit>> held) {
  auto r = co_await c->acquire(0, {}, lane);
  if (!std::holds_alternative<permit>(r)) co_return;
  order->push_back(label);
  held->push_back(std::move(std::get<permit>(r)));
}

// The value of an unlabelled gauge of `m` as a scrape would read it now.
double gauge_value(const admission_metrics& m, const std::string& name) {
  for (const auto& f : m.Collect())
    if (f.name == name && f.metric.size() == 1) return f.metric.front().gauge.value;
  ADD_FAILURE() << "no gauge " << name;
  return -1;
}

}  // namespace

TEST_F(lanes_test, OneKeyIsRefusedPastQueuePerKeyWhileAnotherStillQueues) {
  controller c(opts(1, 16, 2), budget);
  drain_at_exit drain{*this, c};
  auto holder = spawn_acquire(ctx, c);
  poll();
  ASSERT_TRUE(holder->granted());
  auto a1 = spawn_in_lane(ctx, c, key_a);
  auto a2 = spawn_in_lane(ctx, c, key_a);
  poll();
  EXPECT_EQ(c.queued(), 2u);
  auto a3 = spawn_in_lane(ctx, c, key_a);
  poll();
  ASSERT_TRUE(a3->done()) << "refused at once, not queued";
  EXPECT_EQ(a3->refusal().why, refusal::key_queue_full);
  EXPECT_GE(a3->refusal().retry_after, 1s);
  EXPECT_LE(a3->refusal().retry_after, 60s);
  EXPECT_EQ(c.refused_total(refusal::key_queue_full), 1u);
  EXPECT_EQ(c.refused_total(refusal::queue_full), 0u);
  EXPECT_EQ(to_string(refusal::key_queue_full), "key_queue_full");

  auto b1 = spawn_in_lane(ctx, c, key_b);
  poll();
  EXPECT_FALSE(b1->done()) << "another key still queues";
  EXPECT_EQ(c.queued(), 3u);
  EXPECT_EQ(c.lanes(), 2u);

  // A's oldest is admitted: its lane has room for one more again.
  holder->result.reset();
  poll();
  ASSERT_TRUE(a1->granted());
  auto a4 = spawn_in_lane(ctx, c, key_a);
  poll();
  EXPECT_FALSE(a4->done());
  EXPECT_EQ(c.queued(), 3u);
}

TEST_F(lanes_test, QueueFullAndKeyQueueFullAreToldApart) {
  controller c(opts(1, 3, 2), budget);
  drain_at_exit drain{*this, c};
  auto holder = spawn_acquire(ctx, c);
  auto a1 = spawn_in_lane(ctx, c, key_a);
  auto a2 = spawn_in_lane(ctx, c, key_a);
  auto b1 = spawn_in_lane(ctx, c, key_b);
  poll();
  ASSERT_EQ(c.queued(), 3u);
  auto c1 = spawn_in_lane(ctx, c, key_c);  // room in its lane, none in the queue
  auto a3 = spawn_in_lane(ctx, c, key_a);  // A is at its cap (and the queue is full too)
  poll();
  EXPECT_EQ(c1->refusal().why, refusal::queue_full);
  EXPECT_EQ(a3->refusal().why, refusal::key_queue_full);
}

TEST_F(lanes_test, GrantsGoRoundRobinAcrossKeysAndFifoWithinOne) {
  controller c(opts(1, 16, 0), budget);  // 0: no per-key cap
  drain_at_exit drain{*this, c};
  auto holder = spawn_acquire(ctx, c);
  poll();
  ASSERT_TRUE(holder->granted());
  auto order = std::make_shared<std::vector<std::string>>();
  auto held = std::make_shared<std::vector<permit>>();
  auto enqueue = [&](queue_lane lane, std::string label) {
    net::co_spawn(ctx, labelled_waiter(&c, lane, std::move(label), order, held), rethrow);
    poll();  // each one queues before the next starts
  };
  for (int i = 0; i < 5; ++i) enqueue(key_a, "A" + std::to_string(i));
  enqueue(key_b, "B0");
  enqueue(key_c, "C0");
  EXPECT_EQ(c.queued(), 7u);
  EXPECT_EQ(c.lanes(), 3u);
  holder->result.reset();
  for (std::size_t i = 0; i < 7; ++i) {
    poll();
    ASSERT_EQ(order->size(), i + 1);
    EXPECT_EQ(c.in_use(), 1u);
    held->clear();  // passes the slot to the next lane in turn
  }
  EXPECT_EQ(*order, (std::vector<std::string>{"A0", "B0", "C0", "A1", "A2", "A3", "A4"}));
  EXPECT_EQ(c.in_use(), 0u);
  EXPECT_EQ(c.queued(), 0u);
  EXPECT_EQ(c.lanes(), 0u);
}

TEST_F(lanes_test, AKeyThatStartsWaitingJoinsAtTheEndOfTheRound) {
  controller c(opts(1, 16, 0), budget);
  drain_at_exit drain{*this, c};
  auto holder = spawn_acquire(ctx, c);
  poll();
  auto order = std::make_shared<std::vector<std::string>>();
  auto held = std::make_shared<std::vector<permit>>();
  auto enqueue = [&](queue_lane lane, std::string label) {
    net::co_spawn(ctx, labelled_waiter(&c, lane, std::move(label), order, held), rethrow);
    poll();
  };
  for (int i = 0; i < 3; ++i) enqueue(key_a, "A" + std::to_string(i));
  enqueue(key_b, "B0");
  holder->result.reset();
  poll();
  ASSERT_EQ(*order, (std::vector<std::string>{"A0"}));
  // B's turn is next and A has waited too: D comes after both.
  enqueue(key_d, "D0");
  for (int i = 0; i < 4; ++i) {
    held->clear();
    poll();
  }
  held->clear();
  EXPECT_EQ(*order, (std::vector<std::string>{"A0", "B0", "A1", "D0", "A2"}));
  EXPECT_EQ(c.lanes(), 0u);
}

TEST_F(lanes_test, TheAnonymousLaneIsOneFifoWithoutAPerKeyCap) {
  controller c(opts(1, 16, 2), budget);  // a per-key cap of 2 that the anonymous lane ignores
  drain_at_exit drain{*this, c};
  auto holder = spawn_acquire(ctx, c);
  poll();
  auto order = std::make_shared<std::vector<std::string>>();
  auto held = std::make_shared<std::vector<permit>>();
  for (int i = 0; i < 5; ++i) {
    net::co_spawn(ctx, labelled_waiter(&c, queue_lane{}, std::to_string(i), order, held), rethrow);
    poll();
  }
  EXPECT_EQ(c.queued(), 5u) << "no key: only queue-depth bounds the wait";
  EXPECT_EQ(c.lanes(), 1u);
  EXPECT_EQ(c.refused_total(refusal::key_queue_full), 0u);
  holder->result.reset();
  for (int i = 0; i < 5; ++i) {
    poll();
    held->clear();
  }
  EXPECT_EQ(*order, (std::vector<std::string>{"0", "1", "2", "3", "4"}));
  EXPECT_EQ(c.lanes(), 0u);
  // And the fast path still refuses to overtake waiters, whatever the lane.
  auto first = c.try_admit_now(0, key_a);
  ASSERT_TRUE(first.has_value());
  auto waiter = spawn_in_lane(ctx, c, key_b);
  poll();
  first.reset();
  EXPECT_FALSE(c.try_admit_now(0, key_c).has_value()) << "a waiter of another lane is ahead";
  poll();
  EXPECT_TRUE(waiter->granted());
}

TEST_F(lanes_test, WithdrawnWaitersLeaveTheirLaneAndAnEmptyLaneDisappears) {
  controller c(opts(1, 16, 0), budget);
  admission_metrics m(c, budget);  // before the drain: the waiters it finishes report to it
  drain_at_exit drain{*this, c};
  auto holder = spawn_acquire(ctx, c);
  poll();
  net::cancellation_signal gone_a1, gone_b1;
  auto a1 = spawn_acquire(ctx, c, 0, gone_a1.slot(), key_a);  // opened lane A
  auto b1 = spawn_acquire(ctx, c, 0, gone_b1.slot(), key_b);
  auto a2 = spawn_in_lane(ctx, c, key_a);
  auto a3 = spawn_in_lane(ctx, c, key_a);
  poll();
  ASSERT_EQ(c.queued(), 4u);
  EXPECT_EQ(c.lanes(), 2u);
  EXPECT_EQ(gauge_value(m, "sluice_queue_lanes"), 2.0);

  gone_a1.emit(net::cancellation_type::terminal);  // the waiter that opened A leaves; A stays
  poll();
  EXPECT_EQ(a1->refusal().why, refusal::cancelled);
  EXPECT_EQ(c.queued(), 3u);
  EXPECT_EQ(c.lanes(), 2u);
  gone_b1.emit(net::cancellation_type::terminal);  // B's only waiter leaves: B is gone
  poll();
  EXPECT_EQ(b1->refusal().why, refusal::cancelled);
  EXPECT_EQ(c.queued(), 2u);
  EXPECT_EQ(c.lanes(), 1u);
  EXPECT_EQ(gauge_value(m, "sluice_queue_lanes"), 1.0);

  holder->result.reset();  // A's oldest remaining waiter is next
  poll();
  ASSERT_TRUE(a2->granted());
  EXPECT_FALSE(a3->done());
  a2->result.reset();
  poll();
  ASSERT_TRUE(a3->granted());
  EXPECT_EQ(c.queued(), 0u);
  EXPECT_EQ(c.lanes(), 0u);
  EXPECT_EQ(gauge_value(m, "sluice_queue_lanes"), 0.0);
  a3->result.reset();
  EXPECT_EQ(c.in_use(), 0u);
}

TEST_F(lanes_test, TimedOutWaitersLeaveTheirLanes) {
  controller c(opts(1, 16, 0, 5ms), budget);
  admission_metrics m(c, budget);  // before the drain: the waiters it finishes report to it
  drain_at_exit drain{*this, c};
  auto holder = spawn_acquire(ctx, c);
  auto a1 = spawn_in_lane(ctx, c, key_a);
  auto a2 = spawn_in_lane(ctx, c, key_a);
  auto b1 = spawn_in_lane(ctx, c, key_b);
  poll();
  ASSERT_EQ(c.lanes(), 2u);
  for (const auto& w : {a1, a2, b1}) {
    run_until(w);
    ASSERT_TRUE(w->done());
    EXPECT_EQ(w->refusal().why, refusal::queue_timeout);
  }
  EXPECT_EQ(c.queued(), 0u);
  EXPECT_EQ(c.lanes(), 0u);
  EXPECT_EQ(gauge_value(m, "sluice_queue_lanes"), 0.0);
  EXPECT_EQ(c.in_use(), 1u);
  holder->result.reset();
  EXPECT_EQ(c.in_use(), 0u);
}

TEST_F(lanes_test, DrainingRefusesTheWaitersOfEveryLane) {
  controller c(opts(1, 16, 0), budget);
  drain_at_exit drain{*this, c};
  auto holder = spawn_acquire(ctx, c);
  auto a1 = spawn_in_lane(ctx, c, key_a);
  auto a2 = spawn_in_lane(ctx, c, key_a);
  auto b1 = spawn_in_lane(ctx, c, key_b);
  auto c1 = spawn_in_lane(ctx, c, key_c);
  auto anon = spawn_acquire(ctx, c);
  poll();
  ASSERT_EQ(c.queued(), 5u);
  ASSERT_EQ(c.lanes(), 4u);
  c.set_draining(true);
  poll();
  for (const auto& w : {a1, a2, b1, c1, anon}) {
    ASSERT_TRUE(w->done());
    EXPECT_EQ(w->refusal().why, refusal::draining);
  }
  EXPECT_EQ(c.queued(), 0u);
  EXPECT_EQ(c.lanes(), 0u);
  EXPECT_TRUE(holder->granted());
  holder->result.reset();
  EXPECT_EQ(c.in_use(), 0u);
}

TEST_F(lanes_test, ADefaultPerKeyCapAboveTheQueueDepthIsTheQueueDepth) {
  options o;  // queue-per-key left at its default (256)
  o.max_streams = 1;
  o.queue_depth = 3;
  EXPECT_TRUE(o.validate().has_value()) << "a small queue-depth needs no queue-per-key of its own";
  controller c(o, budget);
  drain_at_exit drain{*this, c};
  auto holder = spawn_acquire(ctx, c);
  auto a1 = spawn_in_lane(ctx, c, key_a);
  auto a2 = spawn_in_lane(ctx, c, key_a);
  auto a3 = spawn_in_lane(ctx, c, key_a);
  auto a4 = spawn_in_lane(ctx, c, key_a);
  poll();
  EXPECT_EQ(c.queued(), 3u);
  EXPECT_EQ(a4->refusal().why, refusal::queue_full);
}
