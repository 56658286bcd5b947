// jobs::redis_notifier against a real redis-server: a PUBLISH wakes exactly the wakeups watching
// its payload; after the server is killed and restarted the notifier subscribes again (live()
// false while it is away, waiters woken to read once more) and messages flow again.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "jobs/redis_notifier.hpp"
#include "jobs/wakeup.hpp"
#include "redis/connection.hpp"
#include "redis_server.hpp"
#include "redis_settings.hpp"
#include "runtime/task_group.hpp"

namespace sluice::jobs {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

redis::settings local(std::uint16_t port) { return test::local_redis_settings(port); }

task<void> pause_for(duration d) {
  net::steady_timer t(co_await net::this_coro::executor, d);
  error_code ec;
  co_await t.async_wait(ec_out(ec));
}

TEST(RedisNotifier, APublishWakesItsTopicsWatchersAndSurvivesARestart) {
  test::redis_server server;
  ASSERT_TRUE(server.running());
  net::io_context io;
  runtime::task_group tasks{"notifier-test"};
  auto sub = std::make_shared<redis::connection>(io.get_executor(), local(server.port()), std::vector<redis::script>{}, nullptr);
  auto pub = std::make_shared<redis::connection>(io.get_executor(), local(server.port()), std::vector<redis::script>{}, nullptr);
  redis_notifier n(sub, {"t:{notify}:a", "t:{notify}:jobs"});
  sub->start(tasks);
  pub->start(tasks);
  n.start(tasks);
  bool done = false;
  net::co_spawn(io, [&]() -> task<void> {
    wakeup mine(co_await net::this_coro::executor), other(co_await net::this_coro::executor);
    auto w1 = n.watch_topic("job-1", mine.get_handle());
    auto w2 = n.watch_topic("job-2", other.get_handle());
    for (int i = 0; i < 200 && !n.live(); ++i) co_await pause_for(10ms);
    EXPECT_TRUE(n.live());
    (void)co_await mine.wait(0ms);  // the subscribe's own wake-everyone
    (void)co_await other.wait(0ms);
    auto r = co_await pub->command("PUBLISH", "t:{notify}:a", "job-1");
    EXPECT_EQ(r.value.as_integer().value_or(0), 1) << "one subscriber";
    EXPECT_TRUE(co_await mine.wait(2s)) << "the watcher of job-1 is woken";
    EXPECT_FALSE(co_await other.wait(50ms)) << "job-2's is not";
    (void)co_await pub->command("PUBLISH", "t:{notify}:jobs", "job-2");
    EXPECT_TRUE(co_await other.wait(2s)) << "any subscribed channel";
    // The server restarts: not live meanwhile, then subscribed again.
    server.kill();
    for (int i = 0; i < 200 && n.live(); ++i) co_await pause_for(10ms);
    EXPECT_FALSE(n.live());
    EXPECT_TRUE(server.start());
    for (int i = 0; i < 500 && !n.live(); ++i) co_await pause_for(10ms);
    EXPECT_TRUE(n.live()) << "subscribed again after the reconnect";
    // (No co_await inside || : GCC 12.) The re-subscribe woke every watcher to read once more.
    bool woken = co_await mine.wait(0ms);
    if (!woken) woken = co_await mine.wait(2s);
    EXPECT_TRUE(woken) << "woken to read once more";
    for (int i = 0; i < 200 && !pub->connected(); ++i) co_await pause_for(10ms);
    r = co_await pub->command("PUBLISH", "t:{notify}:a", "job-1");
    EXPECT_EQ(r.value.as_integer().value_or(0), 1);
    EXPECT_TRUE(co_await mine.wait(2s));
    // A watch that ended hears nothing more.
    { auto gone = std::move(w1); }
    (void)co_await pub->command("PUBLISH", "t:{notify}:a", "job-1");
    EXPECT_FALSE(co_await mine.wait(100ms));
    done = true;
  }, [](std::exception_ptr e) { if (e) std::rethrow_exception(e); });
  const auto deadline = clock_type::now() + 30s;
  while (!done && clock_type::now() < deadline) io.run_for(20ms);
  EXPECT_TRUE(done) << "the test body hung";
  net::post(io, [&] { tasks.cancel(); });
  net::post(io, [&] {
    sub->stop();
    pub->stop();
  });
  io.restart();
  io.run_for(3s);
}

}  // namespace
}  // namespace sluice::jobs
