// Single-threaded controller tests: every exit path returns the slot, FIFO order, queue bounds,
// timeouts, cancellation (both ways), races between a grant and a timeout or cancellation, memory
// and draining refusals, and the retry_after estimate.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>

#include "test_support.hpp"

using namespace sluice;
using namespace sluice::admission;
using namespace sluice::admission::testing;
using namespace std::chrono_literals;

namespace {

constexpr std::uint64_t ample_budget = std::uint64_t{1} << 40;

struct controller_test : ::testing::Test {
  net::io_context ctx;
  fake_rss rss;
  memory_budget budget{ample_budget, 0.9, 0.8, rss.fn()};
  manual_clock clock;

  options opts(std::uint64_t max_streams, std::uint64_t depth = 16, duration timeout = 1h) {
    options o;
    o.max_streams = max_streams;
    o.queue_depth = depth;
    o.queue_timeout = timeout;
    return o;
  }
  // Runs the io_context until `out` is done (bounded, so a lost wakeup fails instead of hanging).
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
};

task<void> acquire_then_throw(controller* c) {
  auto r = co_await c->acquire(0);
  if (!std::holds_alternative<permit>(r)) co_return;
  throw std::runtime_error("handler failed while holding a permit");
}

// Acquires, records its index when admitted, then holds the permit until `release` is set.
task<void> ordered_waiter(controller* c, int index, std::shared_ptr<std::vector<int>> order,
                          std::shared_ptr<std::vector<permit>> held) {
  auto r = co_await c->acquire(0);
  if (!std::holds_alternative<permit>(r)) co_return;
  order->push_back(index);
  held->push_back(std::move(std::get<permit>(r)));
}

task<void> wait_for_client_gone(net::steady_timer* gone) {
  error_code ec;
  co_await gone->async_wait(ec_out(ec));
}

// The gateway's pattern: wait for a slot, or stop waiting when the client disconnects.
task<void> acquire_or_gone(controller* c, net::steady_timer* gone, std::shared_ptr<int> winner,
                           std::shared_ptr<outcome> out) {
  using namespace boost::asio::experimental::awaitable_operators;
  // The nested variant comes back flattened: index 0 permit, 1 refused, 2 the client went away.
  auto r = co_await (c->acquire(0) || wait_for_client_gone(gone));
  *winner = static_cast<int>(r.index());
  if (r.index() == 0) out->result = std::move(std::get<0>(r));
  if (r.index() == 1) out->result = std::get<1>(r);
}

}  // namespace

TEST_F(controller_test, ImmediateGrantAndReleaseOnDestruction) {
  controller c(opts(2), budget);
  auto a = spawn_acquire(ctx, c, 100);
  poll();
  ASSERT_TRUE(a->granted());
  EXPECT_EQ(c.in_use(), 1u);
  EXPECT_EQ(budget.reserved(), 100u);
  EXPECT_EQ(a->the_permit().reserved_bytes(), 100u);
  a->result.reset();
  EXPECT_EQ(c.in_use(), 0u);
  EXPECT_EQ(budget.reserved(), 0u);
  EXPECT_EQ(c.admitted_total(), 1u);
}

TEST_F(controller_test, MoveTransfersOwnershipAndMoveAssignReleasesTheOld) {
  controller c(opts(2), budget);
  auto a = spawn_acquire(ctx, c, 10);
  auto b = spawn_acquire(ctx, c, 20);
  poll();
  ASSERT_TRUE(a->granted() && b->granted());
  permit p = std::move(a->the_permit());
  EXPECT_FALSE(a->the_permit());
  EXPECT_TRUE(p);
  EXPECT_EQ(c.in_use(), 2u);
  a->result.reset();  // moved-from: gives nothing back
  EXPECT_EQ(c.in_use(), 2u);
  p = std::move(b->the_permit());  // the 10-byte permit is given back here
  EXPECT_EQ(c.in_use(), 1u);
  EXPECT_EQ(budget.reserved(), 20u);
  p.reset();
  EXPECT_EQ(c.in_use(), 0u);
  EXPECT_EQ(budget.reserved(), 0u);
  p.reset();  // idempotent
  EXPECT_EQ(c.in_use(), 0u);
}

TEST_F(controller_test, ExceptionWhileHoldingReleasesTheSlot) {
  controller c(opts(1), budget);
  bool threw = false;
  net::co_spawn(ctx, acquire_then_throw(&c), [&](std::exception_ptr e) { threw = e != nullptr; });
  poll();
  EXPECT_TRUE(threw);
  EXPECT_EQ(c.in_use(), 0u);
}

TEST_F(controller_test, WaitersAreAdmittedInFifoOrder) {
  controller c(opts(1), budget);
  auto first = spawn_acquire(ctx, c);
  poll();
  ASSERT_TRUE(first->granted());
  auto order = std::make_shared<std::vector<int>>();
  auto held = std::make_shared<std::vector<permit>>();
  for (int i = 0; i < 5; ++i) {
    net::co_spawn(ctx, ordered_waiter(&c, i, order, held), rethrow);
    poll();  // each one queues before the next starts
  }
  EXPECT_EQ(c.queued(), 5u);
  EXPECT_TRUE(order->empty());
  first->result.reset();
  for (int i = 0; i < 5; ++i) {
    poll();
    ASSERT_EQ(order->size(), static_cast<std::size_t>(i + 1));
    EXPECT_EQ(c.in_use(), 1u);
    held->clear();  // passes the slot to the next in line
  }
  EXPECT_EQ(*order, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(c.in_use(), 0u);
  EXPECT_EQ(c.queued(), 0u);
}

TEST_F(controller_test, NewcomerDoesNotOvertakeTheQueue) {
  controller c(opts(1), budget);
  auto holder = spawn_acquire(ctx, c);
  poll();
  auto waiter = spawn_acquire(ctx, c);
  poll();
  ASSERT_EQ(c.queued(), 1u);
  // The slot is released and a newcomer arrives before the waiter's completion has run.
  holder->result.reset();
  auto newcomer = spawn_acquire(ctx, c);
  poll();
  EXPECT_TRUE(waiter->granted());
  EXPECT_FALSE(newcomer->done());
  EXPECT_EQ(c.queued(), 1u);
  waiter->result.reset();
  poll();
  EXPECT_TRUE(newcomer->granted());
}

TEST_F(controller_test, TryAdmitNowGrantsOnlyWithoutWaitingOrOvertaking) {
  controller c(opts(1), budget);
  auto first = c.try_admit_now(0);
  ASSERT_TRUE(first.has_value()) << "a free slot is taken at once";
  EXPECT_EQ(c.in_use(), 1u);
  EXPECT_EQ(c.admitted_total(), 1u);
  EXPECT_FALSE(c.try_admit_now(0).has_value()) << "no free slot: nothing, and nothing queued";
  EXPECT_EQ(c.queued(), 0u);
  auto waiter = spawn_acquire(ctx, c);
  poll();
  ASSERT_EQ(c.queued(), 1u);
  // The slot frees; the waiter's grant is pending, and the fast path must not take the slot.
  first.reset();
  EXPECT_FALSE(c.try_admit_now(0).has_value()) << "a waiter is ahead";
  poll();
  EXPECT_TRUE(waiter->granted());
  waiter->result.reset();
  EXPECT_TRUE(c.try_admit_now(0).has_value());  // released again at once by the temporary
  EXPECT_EQ(c.in_use(), 0u);
  c.set_draining(true);
  EXPECT_FALSE(c.try_admit_now(0).has_value()) << "draining admits nothing";
  c.set_draining(false);
  EXPECT_FALSE(c.try_admit_now(ample_budget * 2).has_value()) << "bytes that can never fit";
}

TEST_F(controller_test, QueueFullIsRefusedAtOnce) {
  controller c(opts(1, 2), budget);
  auto holder = spawn_acquire(ctx, c);
  auto w1 = spawn_acquire(ctx, c);
  auto w2 = spawn_acquire(ctx, c);
  auto w3 = spawn_acquire(ctx, c);
  poll();
  ASSERT_TRUE(holder->granted());
  EXPECT_FALSE(w1->done());
  EXPECT_FALSE(w2->done());
  ASSERT_TRUE(w3->done());
  EXPECT_EQ(w3->refusal().why, refusal::queue_full);
  EXPECT_EQ(c.refused_total(refusal::queue_full), 1u);
  EXPECT_EQ(c.queued(), 2u);
  c.set_draining(true);  // lets the two waiters finish so the controller can be destroyed
  poll();
}

TEST_F(controller_test, ZeroDepthQueueRefusesWhenFull) {
  controller c(opts(1, 0), budget);
  auto holder = spawn_acquire(ctx, c);
  auto w = spawn_acquire(ctx, c);
  poll();
  ASSERT_TRUE(w->done());
  EXPECT_EQ(w->refusal().why, refusal::queue_full);
}

TEST_F(controller_test, QueueTimeoutRefusesAndKeepsTheSlot) {
  // The queue timeout is a real timer: long enough that no scheduling stall on a loaded machine lets
  // it fire before the first poll() below has queued the waiter (5 ms did, once, under load).
  controller c(opts(1, 4, 300ms), budget);
  auto holder = spawn_acquire(ctx, c);
  auto w = spawn_acquire(ctx, c);
  poll();
  ASSERT_FALSE(w->done());
  run_until(w);
  ASSERT_TRUE(w->done());
  EXPECT_EQ(w->refusal().why, refusal::queue_timeout);
  EXPECT_GE(w->refusal().retry_after, 1s);
  EXPECT_EQ(c.queued(), 0u);
  EXPECT_EQ(c.in_use(), 1u);
  EXPECT_EQ(c.refused_total(refusal::queue_timeout), 1u);
  holder->result.reset();
  EXPECT_EQ(c.in_use(), 0u);
}

TEST_F(controller_test, GrantThatRacesWithTimeoutWins) {
  // A zero timeout: the timer has expired by the time the waiter is queued, but its handler has
  // not run yet when the slot is released. The grant decides first, so the waiter gets the permit.
  controller c(opts(1, 4, 0ms), budget);
  auto holder = spawn_acquire(ctx, c);
  poll();
  auto w = spawn_acquire(ctx, c);
  ctx.restart();
  ASSERT_EQ(ctx.run_one(), 1u);  // runs the coroutine up to its suspension in the queue
  ASSERT_EQ(c.queued(), 1u);
  holder->result.reset();
  poll();
  ASSERT_TRUE(w->granted());
  EXPECT_EQ(c.in_use(), 1u);
  EXPECT_EQ(c.refused_total(refusal::queue_timeout), 0u);
}

TEST_F(controller_test, CancelledWaiterLeavesAtOnceAndItsTurnGoesToTheNext) {
  controller c(opts(1), budget);
  auto holder = spawn_acquire(ctx, c);
  poll();
  net::steady_timer gone(ctx, net::steady_timer::time_point::max());
  auto winner = std::make_shared<int>(-1);
  auto cancelled = std::make_shared<outcome>();
  net::co_spawn(ctx, acquire_or_gone(&c, &gone, winner, cancelled), rethrow);
  poll();
  auto next = spawn_acquire(ctx, c);
  poll();
  ASSERT_EQ(c.queued(), 2u);

  gone.cancel();  // the client disconnects
  poll();
  EXPECT_EQ(*winner, 2);
  EXPECT_FALSE(cancelled->done());
  EXPECT_EQ(c.queued(), 1u);
  EXPECT_EQ(c.refused_total(refusal::cancelled), 1u);

  holder->result.reset();
  poll();
  EXPECT_TRUE(next->granted());
  EXPECT_EQ(c.in_use(), 1u);
  EXPECT_EQ(c.queued(), 0u);
}

TEST_F(controller_test, ExplicitWithdrawThroughASignal) {
  controller c(opts(1), budget);
  auto holder = spawn_acquire(ctx, c);
  poll();
  net::cancellation_signal withdraw;
  auto w = spawn_acquire(ctx, c, 0, withdraw.slot());
  poll();
  ASSERT_EQ(c.queued(), 1u);
  withdraw.emit(net::cancellation_type::terminal);
  poll();
  ASSERT_TRUE(w->done());
  EXPECT_EQ(w->refusal().why, refusal::cancelled);
  EXPECT_EQ(c.queued(), 0u);
  holder->result.reset();
  EXPECT_EQ(c.in_use(), 0u);  // nobody got the released slot
}

TEST_F(controller_test, GrantThatRacesWithWithdrawWinsAndTheSlotIsNotLost) {
  controller c(opts(1), budget);
  auto holder = spawn_acquire(ctx, c);
  poll();
  net::cancellation_signal withdraw;
  auto w = spawn_acquire(ctx, c, 0, withdraw.slot());
  poll();
  holder->result.reset();  // grant decided, completion posted but not run yet
  withdraw.emit(net::cancellation_type::terminal);
  poll();
  ASSERT_TRUE(w->granted());
  EXPECT_EQ(c.in_use(), 1u);
  w->result.reset();
  EXPECT_EQ(c.in_use(), 0u);
}

TEST_F(controller_test, DrainingRefusesNewAndQueued) {
  controller c(opts(1), budget);
  auto holder = spawn_acquire(ctx, c);
  auto queued = spawn_acquire(ctx, c);
  poll();
  ASSERT_EQ(c.queued(), 1u);
  c.set_draining(true);
  auto late = spawn_acquire(ctx, c);
  poll();
  EXPECT_EQ(queued->refusal().why, refusal::draining);
  EXPECT_EQ(late->refusal().why, refusal::draining);
  EXPECT_TRUE(holder->granted());  // admitted work keeps running
  holder->result.reset();
  c.set_draining(false);
  auto again = spawn_acquire(ctx, c);
  poll();
  EXPECT_TRUE(again->granted());
}

TEST_F(controller_test, ReservationThatDoesNotFitWaitsThenIsAdmitted) {
  memory_budget small(1000, 0.9, 0.8, rss.fn());
  controller c(opts(4), small);
  auto a = spawn_acquire(ctx, c, 600);
  auto b = spawn_acquire(ctx, c, 600);
  poll();
  ASSERT_TRUE(a->granted());
  EXPECT_FALSE(b->done());  // a slot is free but the bytes are not
  EXPECT_EQ(c.queued(), 1u);
  a->result.reset();
  poll();
  EXPECT_TRUE(b->granted());
  EXPECT_EQ(small.reserved(), 600u);
}

TEST_F(controller_test, MemoryRefusals) {
  memory_budget small(1000, 0.9, 0.8, rss.fn());
  controller c(opts(4), small);
  auto never_fits = spawn_acquire(ctx, c, 1001);
  poll();
  EXPECT_EQ(never_fits->refusal().why, refusal::memory);
  small.sample(901);  // over the shed threshold (900)
  auto shed = spawn_acquire(ctx, c, 1);
  poll();
  EXPECT_EQ(shed->refusal().why, refusal::memory);
  small.sample(900);
  auto fine = spawn_acquire(ctx, c, 1);
  poll();
  EXPECT_TRUE(fine->granted());
  EXPECT_EQ(c.refused_total(refusal::memory), 2u);
}

TEST_F(controller_test, ObserversSeeQueueWaitAndRefusals) {
  controller c(opts(1, 1), budget, clock.fn());
  std::vector<duration> waits;
  c.set_observers({[&](duration d) { waits.push_back(d); }});
  auto holder = spawn_acquire(ctx, c);
  auto w = spawn_acquire(ctx, c);
  auto full = spawn_acquire(ctx, c);
  poll();
  clock.advance(3s);
  holder->result.reset();
  poll();
  ASSERT_TRUE(w->granted());
  EXPECT_EQ(waits, (std::vector<duration>{0s, 3s}));
  // Refusals have no observer any more (the pipeline counts them where the request ends); the
  // controller's own per-reason count says the same.
  EXPECT_EQ(c.refused_total(refusal::queue_full), 1u);
  for (auto other : {refusal::queue_timeout, refusal::memory, refusal::draining, refusal::cancelled})
    EXPECT_EQ(c.refused_total(other), 0u);
}

TEST_F(controller_test, RetryAfterIsBoundedAndGrowsWithTheQueue) {
  // Before any release the estimate assumes 10s per stream: position x 10s / max_streams.
  controller c(opts(10), budget, clock.fn());
  EXPECT_EQ(c.retry_after_for(1), 1s);
  EXPECT_EQ(c.retry_after_for(5), 5s);
  EXPECT_EQ(c.retry_after_for(21), 21s);
  EXPECT_EQ(c.retry_after_for(1000), 60s);
  EXPECT_EQ(c.retry_after_for(0), 1s);
  for (std::uint64_t p = 1; p < 200; ++p) {
    EXPECT_LE(c.retry_after_for(p), c.retry_after_for(p + 1));
    EXPECT_GE(c.retry_after_for(p), 1s);
    EXPECT_LE(c.retry_after_for(p), 60s);
  }
}

TEST_F(controller_test, RetryAfterLearnsTheHoldTime) {
  controller c(opts(2), budget, clock.fn());
  auto a = spawn_acquire(ctx, c);
  poll();
  clock.advance(4s);
  a->result.reset();  // first release seeds the mean hold time
  EXPECT_EQ(c.mean_hold_time(), 4s);
  EXPECT_EQ(c.retry_after_for(10), 20s);  // 10 x 4s / 2
  auto b = spawn_acquire(ctx, c);
  poll();
  clock.advance(14s);
  b->result.reset();
  EXPECT_EQ(c.mean_hold_time(), 5s);  // 4 + 0.1 x (14 - 4)
}

TEST_F(controller_test, QueueFullRetryAfterGrowsWithDepth) {
  auto refused_retry = [&](std::uint64_t depth) {
    controller c(opts(10, depth), budget);
    std::vector<std::shared_ptr<outcome>> all;
    for (std::uint64_t i = 0; i < 10 + depth + 1; ++i) all.push_back(spawn_acquire(ctx, c));
    poll();
    auto r = all.back()->refusal();
    EXPECT_EQ(r.why, refusal::queue_full);
    c.set_draining(true);
    poll();
    all.clear();
    return r.retry_after;
  };
  auto shallow = refused_retry(4);
  auto deep = refused_retry(40);
  EXPECT_GE(shallow, 1s);
  EXPECT_LE(deep, 60s);
  EXPECT_LT(shallow, deep);
}

TEST_F(controller_test, AlreadyCancelledCoroutineIsRefusedWithoutQueueing) {
  controller c(opts(1), budget);
  auto holder = spawn_acquire(ctx, c);
  poll();
  net::cancellation_signal sig;
  auto out = std::make_shared<outcome>();
  net::co_spawn(ctx, acquire_into(&c, 0, out), net::bind_cancellation_slot(sig.slot(), [](std::exception_ptr e) { rethrow(e); }));
  sig.emit(net::cancellation_type::terminal);  // before the coroutine even starts
  poll();
  ASSERT_TRUE(out->done());
  EXPECT_EQ(out->refusal().why, refusal::cancelled);
  EXPECT_EQ(c.queued(), 0u);
}

TEST_F(controller_test, GrantNeverDeliveredStillGivesTheSlotBack) {
  controller c(opts(1), budget);
  std::shared_ptr<outcome> w;
  {
    net::io_context worker;  // a worker that is torn down with a grant still in flight
    auto holder = spawn_acquire(worker, c, 10);
    worker.poll();
    ASSERT_TRUE(holder->granted());
    w = spawn_acquire(worker, c, 10);
    worker.restart();
    worker.poll();
    ASSERT_EQ(c.queued(), 1u);
    holder->result.reset();  // grants `w`; its completion is posted to `worker`, never to run
    EXPECT_EQ(c.in_use(), 1u);
  }
  EXPECT_FALSE(w->done());
  EXPECT_EQ(c.in_use(), 0u);
  EXPECT_EQ(budget.reserved(), 0u);
}
