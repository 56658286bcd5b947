// pod_slots, the pod's max-streams and queue depth in shared memory: the counts per row and in
// total, a dead row's slots given back, the repair after a process died inside the lock (a real
// forked child), and two controllers (two worker processes' worth) sharing one pod's slots.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include "admission/pod_slots.hpp"
#include "runtime/shared_segment.hpp"
#include "test_support.hpp"

using namespace sluice;
using namespace sluice::admission;
using namespace sluice::admission::testing;
using namespace std::chrono_literals;

namespace {

TEST(PodSlots, SlotsAndQueuePlacesHoldForEveryRowTogether) {
  runtime::shared_segment<pod_slots> s;
  EXPECT_TRUE(s->try_take(0, 3));
  EXPECT_TRUE(s->try_take(1, 3));
  EXPECT_TRUE(s->try_take(1, 3));
  EXPECT_FALSE(s->try_take(2, 3)) << "three held in the pod, whichever rows hold them";
  EXPECT_EQ(s->held(), 3u);
  EXPECT_EQ(s->held_by(1), 2u);
  const auto releases = s->releases();
  s->give_back(1);
  EXPECT_EQ(s->releases(), releases + 1);
  EXPECT_TRUE(s->try_take(2, 3));
  EXPECT_TRUE(s->try_queue(0, 2));
  EXPECT_TRUE(s->try_queue(2, 2));
  EXPECT_FALSE(s->try_queue(1, 2));
  s->unqueue(0);
  EXPECT_EQ(s->queued(), 1u);
}

TEST(PodSlots, ADeadRowsSlotsAndPlacesGoBackOnce) {
  runtime::shared_segment<pod_slots> s;
  ASSERT_TRUE(s->try_take(4, 2));
  ASSERT_TRUE(s->try_take(4, 2));
  ASSERT_TRUE(s->try_queue(4, 5));
  s->release_row(4);
  EXPECT_EQ(s->held(), 0u);
  EXPECT_EQ(s->queued(), 0u);
  s->give_back(4);  // a permit of the dead row's that ends late changes nothing
  s->unqueue(4);
  EXPECT_EQ(s->held(), 0u);
  EXPECT_TRUE(s->try_take(0, 2));
  EXPECT_TRUE(s->try_take(0, 2));
}

TEST(PodSlots, AProcessKilledInsideTheLockLeavesTotalsThatAreRepairedFromTheRows) {
  runtime::shared_segment<pod_slots> s;
  ASSERT_TRUE(s->try_take(0, 10));
  // A child takes the lock through the public path and dies holding it: a slot taken, then
  // _exit before the guard unlocks is not reachable through the API, so the child locks the
  // mutex raw (the first member) and dies.
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::pthread_mutex_lock(reinterpret_cast<pthread_mutex_t*>(s.get()));
    std::_Exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_EQ(s->repairs(), 0u);
  EXPECT_TRUE(s->try_take(1, 10)) << "the next lock owns the dead one's mutex";
  EXPECT_EQ(s->repairs(), 1u);
  EXPECT_EQ(s->held(), 2u);
  EXPECT_TRUE(s->try_take(1, 10));  // and the mutex works on
  EXPECT_EQ(s->repairs(), 1u);
}

struct two_workers : ::testing::Test {
  net::io_context ctx;
  fake_rss rss;
  memory_budget budget{std::uint64_t{1} << 40, 0.9, 0.8, rss.fn()};
  runtime::shared_segment<pod_slots> slots;
  options opts() {
    options o;
    o.max_streams = 2;
    o.queue_depth = 1;
    o.queue_timeout = 1h;
    return o;
  }
  controller a{opts(), budget, {}, std::make_unique<pod_slot_row>(*slots, 0)};
  controller b{opts(), budget, {}, std::make_unique<pod_slot_row>(*slots, 1)};
  void poll() {
    ctx.restart();
    ctx.poll();
  }
};

TEST_F(two_workers, MaxStreamsAndQueueDepthHoldForThePodAndAFreedSlotReachesTheOtherAtRegrant) {
  auto p1 = a.try_admit_now(0);
  auto p2 = b.try_admit_now(0);
  ASSERT_TRUE(p1 && p2);
  EXPECT_FALSE(a.try_admit_now(0)) << "the pod's two slots are held, one in each process";
  auto waiting = spawn_acquire(ctx, a);
  auto refused_here = spawn_acquire(ctx, b);
  poll();
  EXPECT_FALSE(waiting->done());
  ASSERT_TRUE(refused_here->done());
  EXPECT_EQ(refused_here->refusal().why, refusal::queue_full) << "the pod's queue has its one place taken";
  EXPECT_EQ(slots->queued(), 1u);

  p2->reset();  // freed in the other process: nothing here learns of it until regrant()
  poll();
  EXPECT_FALSE(waiting->done());
  a.regrant();
  poll();
  ASSERT_TRUE(waiting->granted());
  EXPECT_EQ(slots->held(), 2u);
  EXPECT_EQ(slots->queued(), 0u);
  waiting->the_permit().reset();
  p1->reset();
  EXPECT_EQ(slots->held(), 0u);
  EXPECT_EQ(a.in_use() + b.in_use(), 0u);
}

}  // namespace
