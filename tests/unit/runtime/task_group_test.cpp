// runtime::task_group owns spawned coroutines: counts them, reports an escaped exception once,
// cancels the ones that asked for it, and lets a controlling thread wait until they are all done.
// runtime::live_count: RAII tokens and a wait for zero.
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "runtime/live_count.hpp"
#include "runtime/task_group.hpp"

using namespace sluice;
using namespace std::chrono_literals;

namespace {

task<void> finish_at_once(int& ran) {
  ++ran;
  co_return;
}

task<void> throw_bug() {
  throw std::runtime_error("planted bug");
  co_return;
}

task<void> wait_forever(bool& cancelled) {
  net::steady_timer t(co_await net::this_coro::executor);
  t.expires_at(net::steady_timer::time_point::max());
  error_code ec;
  co_await t.async_wait(ec_out(ec));
  cancelled = ec == net::error::operation_aborted;
}

struct reports {
  std::vector<std::string> lines;
  runtime::task_group::reporter fn() {
    return [this](std::string_view g, std::string_view t, std::string_view w) {
      lines.push_back(std::string(g) + "/" + std::string(t) + ": " + std::string(w));
    };
  }
};

}  // namespace

TEST(task_group, counts_tasks_until_they_end) {
  net::io_context io;
  runtime::task_group g("test");
  int ran = 0;
  g.spawn(io.get_executor(), finish_at_once(ran), "a");
  g.spawn(io.get_executor(), finish_at_once(ran), "b");
  EXPECT_EQ(g.size(), 2u);
  io.run();
  EXPECT_EQ(ran, 2);
  EXPECT_EQ(g.size(), 0u);
  EXPECT_EQ(g.failures(), 0u);
  EXPECT_TRUE(g.wait_for(0ms));
}

TEST(task_group, an_escaped_exception_is_reported_once_with_its_task) {
  net::io_context io;
  reports r;
  runtime::task_group g("workers", r.fn());
  g.spawn(io.get_executor(), throw_bug(), "session");
  io.run();
  ASSERT_EQ(r.lines.size(), 1u);
  EXPECT_EQ(r.lines[0], "workers/session: planted bug");
  EXPECT_EQ(g.failures(), 1u);
  EXPECT_EQ(g.size(), 0u);
}

TEST(task_group, cancel_reaches_cancellable_tasks_only) {
  net::io_context io;
  runtime::task_group g("test");
  bool a = false, b = false;
  g.spawn(io.get_executor(), wait_forever(a), "cancellable", true);
  g.spawn(io.get_executor(), wait_forever(b), "not cancellable", false);
  io.poll();
  g.cancel();
  io.poll();
  EXPECT_TRUE(a);
  EXPECT_FALSE(b);
  EXPECT_EQ(g.size(), 1u);
  io.stop();  // the other task never ends; destroying the io_context destroys its frame
}

TEST(task_group, wait_for_blocks_until_tasks_on_other_threads_end) {
  net::io_context io;
  runtime::task_group g("test");
  bool cancelled = false;
  g.spawn(io.get_executor(), wait_forever(cancelled), "waiter", true);
  EXPECT_FALSE(g.wait_for(20ms)) << "the task is still waiting";
  std::thread runner([&] { io.run(); });
  g.cancel();
  EXPECT_TRUE(g.wait_for(5s));
  runner.join();
  EXPECT_TRUE(cancelled);
}

TEST(live_count, tokens_count_and_the_wait_sees_zero) {
  runtime::live_count c;
  EXPECT_TRUE(c.wait_zero_until(std::chrono::steady_clock::now()));
  auto a = c.enter();
  {
    auto b = c.enter();
    EXPECT_EQ(c.value(), 2u);
    auto moved = std::move(b);
    EXPECT_EQ(c.value(), 2u);
  }
  EXPECT_EQ(c.value(), 1u);
  EXPECT_FALSE(c.wait_zero_until(std::chrono::steady_clock::now() + 10ms));
  std::thread later([&] {
    std::this_thread::sleep_for(20ms);
    a.reset();
  });
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(c.wait_zero_until(t0 + 5s));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 4s);
  later.join();
  EXPECT_EQ(c.value(), 0u);
}

TEST(live_count, many_threads_lose_nothing) {
  runtime::live_count c;
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&] {
      for (int i = 0; i < 50000; ++i) auto tok = c.enter();
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(c.value(), 0u);
  EXPECT_TRUE(c.wait_zero_until(std::chrono::steady_clock::now()));
}
