// The shared client-key limits (admission::shared_key_limits) against a real redis-server: several
// "replicas" in one process (each its own Redis client, lease keeper and limits over one worker
// pool, as separate gateways would have), the key_admit/key_settle scripts' arithmetic (rpm window
// refill, tpm reservation and refund, concurrency slots), lease expiry of a replica that stopped
// renewing, concurrent reservations from many connections, and the failure modes with Redis down
// and frozen. The three-process tests with the real binary are in fleet_limits_test.cpp.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/co_spawn.hpp>

#include "admission/shared_key_limits.hpp"
#include "redis/availability.hpp"
#include "redis/client.hpp"
#include "redis/leases.hpp"
#include "redis_server.hpp"
#include "runtime/task_group.hpp"
#include "runtime/loop_pool.hpp"

namespace sluice::admission {
namespace {

using namespace std::chrono_literals;
using test::redis_server;

redis::options options_for(std::uint16_t port, redis::failure_mode mode = redis::failure_mode::local,
                           std::uint64_t fallback_replicas = 1, duration lease = 30s) {
  redis::options o;
  o.url = "redis://127.0.0.1:" + std::to_string(port);
  o.command_timeout = 200ms;  // generous: the machine is shared; the freeze test relies on it passing
  o.lease = lease;
  o.on_failure = mode;
  o.fallback_replicas = fallback_replicas;
  return o;
}

// One replica's shared limits: its own client (a connection per pool thread), keeper and limits.
struct replica {
  replica(runtime::loop_pool& pool, const std::string& keys_text, const redis::options& o, bool renew = true)
      : availability(o.on_failure, "redis://test"),
        leases(redis::lease_keeper::random_replica_name(), o.lease),
        limits(client_keys::parse(keys_text).value(), o, availability, leases) {
    auto s = o.resolve().value();
    s.backoff_min = 10ms;
    s.backoff_max = 100ms;
    std::vector<redis::script> scripts{redis::lease_keeper::renew_script()};
    for (auto& sc : shared_key_limits::scripts()) scripts.push_back(sc);
    client = std::make_unique<redis::client>(pool, s, scripts);
    limits.attach(*client, 1);
    client->start(tasks);
    if (renew) tasks.spawn(pool.context(0).get_executor(), leases.run(client->on(0), 0, tasks), "renewals", true);
  }
  ~replica() { stop(); }
  void stop() {
    if (stopped) return;
    stopped = true;
    tasks.cancel();
    client->stop();
    limits.detach();
  }
  bool connected() {
    for (std::size_t i = 0; i < client->size(); ++i)
      if (!client->on(i).connected()) return false;
    return true;
  }

  redis::availability availability;
  redis::lease_keeper leases;
  shared_key_limits limits;
  runtime::task_group tasks{"replica"};
  std::unique_ptr<redis::client> client;
  bool stopped = false;
};

class SharedLimits : public ::testing::Test {
 protected:
  SharedLimits() { pool_.start(); }
  ~SharedLimits() override {
    // Every replica's coroutines end on the pool before the replicas (their task groups) go.
    for (auto& r : replicas_) r->stop();
    for (auto& r : replicas_) {
      EXPECT_TRUE(r->tasks.wait_for(5000ms)) << "a replica's coroutines outlived its stop()";
      settled(*r);
    }
    pool_.release();
    pool_.wait_for(5000ms);
    pool_.stop();
    replicas_.clear();
  }

  replica& add(const std::string& keys, const redis::options& o, bool renew = true) {
    replicas_.push_back(std::make_unique<replica>(pool_, keys, o, renew));
    auto& r = *replicas_.back();
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (!r.connected() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
    EXPECT_TRUE(r.connected());
    return r;
  }

  // One admission decision made on pool thread `thread`, as the pipeline makes it.
  key_decision decide(replica& r, std::string_view key, std::uint64_t tokens = 0, std::size_t thread = 0) {
    auto handle = r.limits.authenticate_header("Bearer " + std::string(key)).value();
    std::promise<key_decision> p;
    auto f = p.get_future();
    net::co_spawn(pool_.context(thread % pool_.size()),
                  [](shared_key_limits& l, key_handle h, std::uint64_t t) -> task<key_decision> {
                    if (auto now = l.try_acquire_now(h, t)) co_return std::move(*now);
                    co_return co_await l.acquire(h, t);
                  }(r.limits, handle, tokens),
                  [&p](std::exception_ptr e, key_decision d) {
                    if (e) p.set_exception(e);
                    else p.set_value(std::move(d));
                  });
    return f.get();
  }

  // Waits until every settle the replica spawned has been answered.
  static void settled(replica& r) {
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (r.limits.settles_in_flight() != 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(1ms);
    EXPECT_EQ(r.limits.settles_in_flight(), 0u);
  }

  runtime::loop_pool pool_{2};
  std::vector<std::unique_ptr<replica>> replicas_;
};

bool admitted(const key_decision& d) { return std::holds_alternative<key_permit>(d); }
const rate_refusal& rate_refusal_of(const key_decision& d) { return std::get<rate_refusal>(d); }

TEST_F(SharedLimits, RequestsPerMinuteHoldAcrossReplicas) {
  redis_server server;
  auto o = options_for(server.port());
  const std::string keys = "sk-one 0 12 one\n";
  std::vector<replica*> fleet{&add(keys, o), &add(keys, o), &add(keys, o)};
  int ok = 0, refused = 0;
  for (int i = 0; i < 36; ++i) {
    auto d = decide(*fleet[i % 3], "sk-one", 0, static_cast<std::size_t>(i));
    if (admitted(d)) {
      ++ok;
      EXPECT_EQ(std::get<key_permit>(d).headers.requests->limit, 12u);
    } else {
      ++refused;
      EXPECT_EQ(rate_refusal_of(d).which, rate_limit_kind::rpm);
      EXPECT_GE(rate_refusal_of(d).retry_after, 1s);
      EXPECT_LE(rate_refusal_of(d).retry_after, 5s);  // one request refills in 60s/12
      EXPECT_EQ(rate_refusal_of(d).headers.requests->remaining, 0u);
    }
  }
  // A refill of one request lands every 5 s: at most one more within the run.
  EXPECT_GE(ok, 12);
  EXPECT_LE(ok, 13);
  EXPECT_EQ(ok + refused, 36);
  for (auto* r : fleet) EXPECT_FALSE(r->availability.degraded());
}

TEST_F(SharedLimits, TheWindowRefillsContinuously) {
  redis_server server;
  auto& r = add("sk-fast 0 600 fast\n", options_for(server.port()));  // one request every 100 ms
  int ok = 0;
  for (int i = 0; i < 600; ++i) ok += admitted(decide(r, "sk-fast", 0, static_cast<std::size_t>(i))) ? 1 : 0;
  EXPECT_EQ(ok, 600);  // the full burst
  // Spend what dripped in meanwhile, until a refusal: the bucket is empty now.
  int drained = 0;
  std::optional<key_decision> refused;
  while (drained < 100) {
    auto d = decide(r, "sk-fast");
    if (!admitted(d)) {
      refused.emplace(std::move(d));
      break;
    }
    ++drained;
  }
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(rate_refusal_of(*refused).retry_after, 1s);  // under 100 ms, rounded up to the header's 1 s
  const auto empty_at = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(400ms);
  int later = 0;
  while (later < 50 && admitted(decide(r, "sk-fast"))) ++later;
  const double elapsed_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - empty_at).count();
  // One request per 100 ms since the bucket was found empty (a fraction may have been there).
  EXPECT_GE(later, static_cast<int>(elapsed_ms / 100.0) - 1) << elapsed_ms;
  EXPECT_LE(later, static_cast<int>(elapsed_ms / 100.0) + 1) << elapsed_ms;
}

TEST_F(SharedLimits, ConcurrencySlotsHoldAcrossReplicasAndFreeOnRelease) {
  redis_server server;
  auto o = options_for(server.port());
  const std::string keys = "sk-s 4 0 s\n";
  auto& a = add(keys, o);
  auto& b = add(keys, o);
  auto& c = add(keys, o);
  std::vector<key_permit> held;
  int refused = 0;
  for (int i = 0; i < 12; ++i) {
    replica& r = i % 3 == 0 ? a : i % 3 == 1 ? b : c;
    auto d = decide(r, "sk-s", 0, static_cast<std::size_t>(i));
    if (admitted(d)) held.push_back(std::move(std::get<key_permit>(d)));
    else {
      ++refused;
      EXPECT_EQ(rate_refusal_of(d).which, rate_limit_kind::concurrency);
    }
  }
  EXPECT_EQ(held.size(), 4u);
  EXPECT_EQ(refused, 8);
  EXPECT_EQ(a.leases.held() + b.leases.held() + c.leases.held(), 4u);
  held.pop_back();  // one stream ends: its replica gives the slot back
  for (auto* r : {&a, &b, &c}) settled(*r);
  auto fourth = decide(c, "sk-s");  // held: the slot is taken again
  EXPECT_TRUE(admitted(fourth));
  EXPECT_FALSE(admitted(decide(a, "sk-s")));
}

TEST_F(SharedLimits, AReplicaThatStopsRenewingLosesItsSlotsWithinOneLease) {
  redis_server server;
  auto o = options_for(server.port(), redis::failure_mode::local, 1, 1s);
  const std::string keys = "sk-l 2 0 l\n";
  auto& dying = add(keys, o, false);
  auto& alive = add(keys, o);
  auto p1 = decide(dying, "sk-l"), p2 = decide(dying, "sk-l");
  ASSERT_TRUE(admitted(p1));
  ASSERT_TRUE(admitted(p2));
  // The dying replica goes silent (as after kill -9): no renewals, no settles.
  dying.stop();
  const auto killed = std::chrono::steady_clock::now();
  EXPECT_FALSE(admitted(decide(alive, "sk-l")));
  std::vector<key_permit> mine;
  while (std::chrono::steady_clock::now() - killed < 3s) {
    auto d = decide(alive, "sk-l");
    if (admitted(d)) mine.push_back(std::move(std::get<key_permit>(d)));
    if (mine.size() == 2) break;
    std::this_thread::sleep_for(20ms);
  }
  const auto freed_after = std::chrono::steady_clock::now() - killed;
  ASSERT_EQ(mine.size(), 2u) << "the silent replica's slots never expired";
  EXPECT_LE(freed_after, 1500ms);
  // The live replica renews its own slots: they outlive several leases.
  std::this_thread::sleep_for(2500ms);
  EXPECT_FALSE(admitted(decide(alive, "sk-l")));
  EXPECT_GE(alive.leases.renewals_ok(), 3u);
  EXPECT_EQ(alive.leases.lost(), 0u);
}

TEST_F(SharedLimits, TokensAreReservedThenSettledToTheUse) {
  redis_server server;
  auto o = options_for(server.port());
  const std::string keys = "sk-t 0 0 t tpm=1000\n";
  auto& a = add(keys, o);
  auto& b = add(keys, o);
  auto p = decide(a, "sk-t", 700);
  ASSERT_TRUE(admitted(p));
  EXPECT_EQ(std::get<key_permit>(p).headers.tokens->remaining, 300u);
  auto too_much = decide(b, "sk-t", 400);  // the other replica sees the reservation
  ASSERT_FALSE(admitted(too_much));
  EXPECT_EQ(rate_refusal_of(too_much).which, rate_limit_kind::tpm);
  EXPECT_GE(rate_refusal_of(too_much).retry_after, 6s);  // 100 tokens at 1000 a minute
  EXPECT_LE(rate_refusal_of(too_much).retry_after, 7s);
  // The request used 100 of its 700: 600 come back (a cancelled stream that streamed little).
  std::get<key_permit>(p).used_tokens(100);
  p = rate_refusal{};
  settled(a);
  auto fits = decide(b, "sk-t", 850);
  ASSERT_TRUE(admitted(fits));
  EXPECT_LE(std::get<key_permit>(fits).headers.tokens->remaining, 51u);
  // A use above the estimate is charged too: the budget goes into debt.
  std::get<key_permit>(fits).used_tokens(1850);
  fits = rate_refusal{};
  settled(b);
  auto debt = decide(a, "sk-t", 1);
  ASSERT_FALSE(admitted(debt));
  EXPECT_GE(rate_refusal_of(debt).retry_after, 55s);
}

TEST_F(SharedLimits, ConcurrentReservationsFromManyConnectionsNeverOvershoot) {
  redis_server server;
  auto o = options_for(server.port());
  const std::string keys = "sk-c 0 100 c tpm=100000\n";
  auto& a = add(keys, o);
  auto& b = add(keys, o);
  std::atomic<int> ok{0};
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> callers;
  for (int t = 0; t < 8; ++t) {
    callers.emplace_back([&, t] {
      for (int i = 0; i < 40; ++i)
        if (admitted(decide(t % 2 ? a : b, "sk-c", 1000, static_cast<std::size_t>(i)))) ok.fetch_add(1);
    });
  }
  for (auto& c : callers) c.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // 320 reservations of 1000 tokens from 4 connections at once: 100 fit the token budget (and the
  // request budget), and both refill by 100 a minute: 1.7 more for every second the run took.
  EXPECT_GE(ok.load(), 100);
  EXPECT_LE(ok.load(), 101 + static_cast<int>(secs * 100.0 / 60.0)) << secs;
}

TEST_F(SharedLimits, RedisDownFallsBackToTheReplicasShareAndRecovers) {
  redis_server server;
  auto o = options_for(server.port(), redis::failure_mode::local, 3);
  auto& r = add("sk-d 0 30 d\n", o);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(admitted(decide(r, "sk-d")));
  EXPECT_FALSE(r.availability.degraded());
  server.kill();
  int ok = 0;
  for (int i = 0; i < 20; ++i) ok += admitted(decide(r, "sk-d")) ? 1 : 0;
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // rpm 30 over 3 replicas: this one's share is 10 a minute, but it starts from what the fleet had
  // left at Redis's last answer (29, refilled by 0.5 a second), divided the same way, not from a
  // full share (fallback_carry): 9 in the first second. Its share then refills by 10 a minute.
  EXPECT_GE(ok, 9);
  EXPECT_LE(ok, static_cast<int>((29 + 0.5 * secs) / 3 + secs / 6)) << secs;
  EXPECT_TRUE(r.availability.degraded());
  EXPECT_EQ(r.availability.fallbacks(redis::shared_limit::client_key), 20u);
  ASSERT_TRUE(server.start());
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  bool back = false;
  while (!back && std::chrono::steady_clock::now() < deadline) {
    auto d = decide(r, "sk-d");
    back = !r.availability.degraded();
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(back) << "the shared limits did not recover";
}

// Until connected again (the replica's connections are remade after a restart).
void await_connected(replica& r) {
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!r.connected() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
}

TEST_F(SharedLimits, SwitchingToLocalAndBackCarriesTheBudgetInsteadOfHandingOutAFreshOne) {
  // One replica (its share is the whole limit): 30 requests a minute, one every 2 s. Each switch
  // used to give a fresh budget: falling back, a full local bucket; coming back, Redis's bucket
  // refilled through the outage, or full after a restart without its data. Phases: through Redis,
  // Redis frozen (SIGSTOP: every decision waits out its deadline, then decides alone), Redis
  // resumed with its data, Redis killed (decided alone at once), Redis restarted empty.
  redis_server server;
  auto& r = add("sk-c 0 30 c\n", options_for(server.port(), redis::failure_mode::local, 1));
  const auto t0 = std::chrono::steady_clock::now();
  int ok = 0;
  auto try_n = [&](int n) {
    int got = 0;
    for (int i = 0; i < n; ++i) got += admitted(decide(r, "sk-c", 0, static_cast<std::size_t>(i))) ? 1 : 0;
    ok += got;
    return got;
  };
  EXPECT_EQ(try_n(20), 20);
  server.pause();
  const int frozen = try_n(15);
  EXPECT_TRUE(r.availability.degraded());
  server.resume();
  // The frozen connections were dropped as stalled: until they are made again, decisions still go
  // alone (carried all the same). Redis decides again once they are.
  int resumed = try_n(15);
  await_connected(r);
  resumed += try_n(1);
  EXPECT_FALSE(r.availability.degraded());
  server.kill();
  const int down = try_n(15);
  ASSERT_TRUE(server.start());
  await_connected(r);
  const int restarted = try_n(15);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "admitted %d of 81 in %.1f s against a budget of 30 + %.1f refilled (frozen %d, resumed %d, down %d, "
      "restarted %d)\n",
      ok, secs, secs / 2, frozen, resumed, down, restarted);
  // The budget: the burst of 30 and one request every 2 s since, plus one for the rounding of each
  // of the four switches. Before the carry: 20 + 10 + 10 + 15 + 15 here (a fresh budget each time).
  EXPECT_LE(ok, 30 + static_cast<int>(secs / 2) + 4) << secs;
}

TEST_F(SharedLimits, StreamsHeldThroughRedisOrAloneCountOnBothSidesOfASwitch) {
  redis_server server;
  auto& r = add("sk-s 2 0 s\nsk-t 1 0 t\n", options_for(server.port(), redis::failure_mode::local, 1));
  // Two streams held through Redis: deciding alone, the key is at its max_streams already.
  auto a = decide(r, "sk-s");
  auto b = decide(r, "sk-s");
  ASSERT_TRUE(admitted(a) && admitted(b));
  server.pause();
  auto c = decide(r, "sk-s");
  ASSERT_FALSE(admitted(c));
  EXPECT_EQ(rate_refusal_of(c).which, rate_limit_kind::concurrency);
  // A stream admitted alone, still running when Redis is back: Redis counts it too.
  auto alone = decide(r, "sk-t");
  ASSERT_TRUE(admitted(alone));
  server.resume();
  auto d = decide(r, "sk-t");
  ASSERT_FALSE(admitted(d));
  EXPECT_EQ(rate_refusal_of(d).which, rate_limit_kind::concurrency);
  EXPECT_FALSE(r.availability.degraded()) << "the refusal is Redis's answer, not a fallback";
}

TEST_F(SharedLimits, ClosedModeRefusesWhileRedisIsFrozenAndRecovers) {
  redis_server server;
  auto o = options_for(server.port(), redis::failure_mode::closed);
  auto& r = add("sk-f 0 1000 f\n", o);
  EXPECT_TRUE(admitted(decide(r, "sk-f")));
  server.pause();  // slow, not down: every decision waits out its deadline
  const auto t0 = std::chrono::steady_clock::now();
  auto d = decide(r, "sk-f");
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(admitted(d));
  EXPECT_EQ(rate_refusal_of(d).which, rate_limit_kind::unavailable);
  EXPECT_GE(took, 150ms);
  EXPECT_LE(took, 1500ms);  // the command deadline (200 ms), never a hang
  EXPECT_TRUE(r.availability.degraded());
  server.resume();
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  bool ok = false;
  while (!ok && std::chrono::steady_clock::now() < deadline) {
    ok = admitted(decide(r, "sk-f"));
    if (!ok) std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(ok);
  EXPECT_FALSE(r.availability.degraded());
}

TEST_F(SharedLimits, KeysWithoutLimitsNeverAskRedis) {
  redis_server server;
  auto& r = add("sk-free 0 0 free\n", options_for(server.port()));
  server.kill();
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(admitted(decide(r, "sk-free")));
  EXPECT_FALSE(r.availability.degraded());
}

}  // namespace
}  // namespace sluice::admission
