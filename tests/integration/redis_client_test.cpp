// redis::connection against a real redis-server (a child process on a free loopback port):
// pipelining from many coroutines, EVALSHA with NOSCRIPT recovery, deadlines, a killed and
// restarted server, the in-flight bound, AUTH with a password from the environment.
#include <gtest/gtest.h>

#include <spdlog/sinks/ostream_sink.h>

#include <atomic>
#include <cstdlib>
#include <thread>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include "observability/log.hpp"
#include "redis/client.hpp"
#include "redis/connection.hpp"
#include "redis_server.hpp"
#include "redis_settings.hpp"
#include "runtime/task_group.hpp"

namespace sluice::redis {
namespace {

using namespace std::chrono_literals;
using test::redis_server;
using clock_type = std::chrono::steady_clock;

settings local(std::uint16_t port) { return test::local_redis_settings(port); }

task<void> sleep_for(duration d) {
  net::steady_timer t(co_await net::this_coro::executor, d);
  error_code ec;
  co_await t.async_wait(ec_out(ec));
}

task<bool> wait_until_connected(connection& c, duration limit = 5s) {
  const auto deadline = clock_type::now() + limit;
  while (!c.connected() && clock_type::now() < deadline) co_await sleep_for(2ms);
  co_return c.connected();
}

double counter_value(const metrics& m, std::string_view name, std::string_view script, std::string_view out) {
  for (const auto& f : m.Collect()) {
    if (f.name != name) continue;
    for (const auto& s : f.metric) {
      std::string sc, oc;
      for (const auto& l : s.label) {
        if (l.name == "script") sc = l.value;
        if (l.name == "outcome") oc = l.value;
      }
      if (sc == script && oc == out) return s.counter.value;
    }
  }
  return -1;
}

double gauge_value(const metrics& m, std::string_view name) {
  for (const auto& f : m.Collect()) {
    if (f.name == name && !f.metric.empty()) return f.metric[0].gauge.value;
  }
  return -1;
}

// One io_context on the test thread: the body runs as a coroutine; afterwards every connection is
// stopped and the loop must drain (no coroutine left behind).
class RedisClient : public ::testing::Test {
 protected:
  std::shared_ptr<connection> make(settings s, std::vector<script> scripts = {}) {
    std::vector<script> copy = scripts;
    if (!metrics_) metrics_ = std::make_shared<metrics>(copy);
    auto c = std::make_shared<connection>(io_.get_executor(), std::move(s), std::move(scripts), metrics_);
    c->start(tasks_);
    conns_.push_back(c);
    return c;
  }

  void drive(std::function<task<void>()> body, duration limit = 20s) {
    bool done = false;
    std::exception_ptr failure;
    net::co_spawn(io_, body(), [&](std::exception_ptr e) {
      failure = e;
      done = true;
    });
    const auto deadline = clock_type::now() + limit;
    while (!done && clock_type::now() < deadline) io_.run_for(20ms);
    EXPECT_TRUE(done) << "the test body hung";
    net::post(io_, [this] {
      for (auto& c : conns_) c->stop();
    });
    io_.restart();
    io_.run_for(5s);
    EXPECT_EQ(tasks_.size(), 0u) << "a connection's coroutines outlived stop()";
    EXPECT_EQ(tasks_.failures(), 0u);
    if (failure) std::rethrow_exception(failure);
  }

  net::io_context io_;
  runtime::task_group tasks_{"redis-test"};
  std::shared_ptr<metrics> metrics_;
  std::vector<std::shared_ptr<connection>> conns_;
};

TEST_F(RedisClient, PipelinesManyCommandsFromManyCoroutinesInOrder) {
  redis_server server;
  ASSERT_TRUE(server.running());
  auto c = make(local(server.port()));
  drive([&]() -> task<void> {
    EXPECT_TRUE(co_await wait_until_connected(*c));
    constexpr int clients = 200, rounds = 10;
    int finished = 0, wrong = 0;
    std::size_t peak = 0;
    for (int i = 0; i < clients; ++i) {
      tasks_.spawn(io_.get_executor(), [](connection& conn, int i, int& finished, int& wrong) -> task<void> {
        for (int j = 0; j < rounds; ++j) {
          const std::string key = "k:" + std::to_string(i);
          const std::string value = "v:" + std::to_string(i) + ":" + std::to_string(j);
          response set = co_await conn.command("SET", key, value);
          response get = co_await conn.command("GET", key);
          response incr = co_await conn.command("INCR", "total");
          if (!set.ok() || set.value.str != "OK") ++wrong;
          if (!get.ok() || get.value.str != value) ++wrong;  // another client's reply would not match
          if (!incr.ok() || incr.value.type != reply::kind::integer) ++wrong;
        }
        ++finished;
      }(*c, i, finished, wrong), "client");
    }
    while (finished < clients) {
      peak = std::max(peak, c->in_flight());
      co_await net::post(io_.get_executor(), use_task);
    }
    EXPECT_EQ(wrong, 0);
    EXPECT_GT(peak, 50u) << "commands were not pipelined";
    response total = co_await c->command("GET", "total");
    EXPECT_EQ(total.value.as_integer(), clients * rounds * 1);
    response arr = co_await c->command("MGET", "k:0", "nope");
    EXPECT_EQ(arr.value.describe(), "[str \"v:0:9\", nil]");
    EXPECT_EQ(c->in_flight(), 0u);
  });
  EXPECT_EQ(counter_value(*metrics_, "sluice_redis_commands_total", "command", "ok"), 200 * 10 * 3 + 2);
  EXPECT_EQ(gauge_value(*metrics_, "sluice_redis_in_flight"), 0);
  EXPECT_EQ(gauge_value(*metrics_, "sluice_redis_connected"), 0);  // stopped
}

TEST_F(RedisClient, EvalshaRecoversFromNoscript) {
  redis_server server;
  ASSERT_TRUE(server.running());
  std::vector<script> scripts = {script::make("incrby", "return redis.call('INCRBY', KEYS[1], ARGV[1])"),
                                 script::make("broken", "return redis.call('NOSUCHCOMMAND')")};
  auto c = make(local(server.port()), scripts);
  drive([&]() -> task<void> {
    EXPECT_TRUE(co_await wait_until_connected(*c));
    const std::string_view keys[] = {"ctr"};
    const std::string_view five[] = {"5"};
    response a = co_await c->run(0, keys, five);
    EXPECT_EQ(a.status, outcome::ok);
    EXPECT_EQ(a.value.as_integer(), 5);
    // Loaded at connect: Redis knows the SHA computed here.
    response exists = co_await c->command("SCRIPT", "EXISTS", scripts[0].sha1, scripts[1].sha1);
    EXPECT_EQ(exists.value.describe(), "[int 1, int 1]");
    response flushed = co_await c->command("SCRIPT", "FLUSH");
    EXPECT_TRUE(flushed.ok());
    response b = co_await c->run(0, keys, five);  // NOSCRIPT -> EVAL, transparently
    EXPECT_EQ(b.status, outcome::ok) << b.value.describe();
    EXPECT_EQ(b.value.as_integer(), 10);
    response again = co_await c->command("SCRIPT", "EXISTS", scripts[0].sha1);
    EXPECT_EQ(again.value.describe(), "[int 1]");  // EVAL cached it again
    response bad = co_await c->run(1, {}, {});
    EXPECT_EQ(bad.status, outcome::error_reply);
    EXPECT_TRUE(bad.value.is_error());
  });
  EXPECT_EQ(counter_value(*metrics_, "sluice_redis_commands_total", "incrby", "ok"), 2);
  EXPECT_EQ(counter_value(*metrics_, "sluice_redis_commands_total", "incrby", "error_reply"), 0);
  EXPECT_EQ(counter_value(*metrics_, "sluice_redis_commands_total", "broken", "error_reply"), 1);
}

TEST_F(RedisClient, DeadlineFiresAndLaterRepliesStayMatched) {
  redis_server server;
  ASSERT_TRUE(server.running());
  settings s = local(server.port());
  s.command_timeout = 50ms;
  auto c = make(s);
  drive([&]() -> task<void> {
    EXPECT_TRUE(co_await wait_until_connected(*c));
    EXPECT_TRUE((co_await c->command("SET", "k", "v")).ok());
    // The server sleeps 200 ms: the command and the one queued behind it both time out, and their
    // late replies are read and dropped in order.
    auto t0 = clock_type::now();
    response slow = co_await c->command("DEBUG", "SLEEP", "0.2");
    EXPECT_EQ(slow.status, outcome::timeout);
    EXPECT_LT(clock_type::now() - t0, 150ms);
    response behind = co_await c->command("ECHO", "behind");
    EXPECT_EQ(behind.status, outcome::timeout);
    co_await sleep_for(250ms);
    response get = co_await c->command("GET", "k");
    EXPECT_EQ(get.status, outcome::ok);
    EXPECT_EQ(get.value.str, "v");
    EXPECT_EQ((co_await c->command("ECHO", "x")).value.str, "x");
    EXPECT_EQ(c->connects(), 1u);  // a slow server is not a dead one
  });
  EXPECT_EQ(counter_value(*metrics_, "sluice_redis_commands_total", "command", "timeout"), 2);
}

TEST_F(RedisClient, StoppedServerTimesOutThenRecoversAfterSigcont) {
  redis_server server;
  ASSERT_TRUE(server.running());
  settings s = local(server.port());
  s.command_timeout = 50ms;
  auto c = make(s);
  drive([&]() -> task<void> {
    EXPECT_TRUE(co_await wait_until_connected(*c));
    server.pause();
    auto t0 = clock_type::now();
    response r = co_await c->command("PING");
    EXPECT_EQ(r.status, outcome::timeout);
    EXPECT_LT(clock_type::now() - t0, 200ms);
    server.resume();
    co_await sleep_for(50ms);
    response after = co_await c->command("ECHO", "hello");
    EXPECT_EQ(after.status, outcome::ok);
    EXPECT_EQ(after.value.str, "hello");
    EXPECT_EQ(c->in_flight(), 0u);
  });
}

TEST_F(RedisClient, KilledServerFailsPendingThenReconnectsOnRestart) {
  std::ostringstream log_text;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log_text);
  ASSERT_TRUE(obs::init_logging(obs::log_options{"info", "text"}, sink));
  redis_server server;
  ASSERT_TRUE(server.running());
  settings s = local(server.port());
  s.command_timeout = 3s;
  auto c = make(s);
  drive([&]() -> task<void> {
    EXPECT_TRUE(co_await wait_until_connected(*c));
    EXPECT_TRUE((co_await c->command("PING")).ok());
    // Eight commands wait on a stopped server; then it dies.
    server.pause();
    int failed = 0, other = 0;
    for (int i = 0; i < 8; ++i) {
      tasks_.spawn(io_.get_executor(), [](connection& conn, int& failed, int& other) -> task<void> {
        response r = co_await conn.command("INCR", "n");
        if (r.status == outcome::disconnected) {
          ++failed;
        } else {
          ++other;
        }
      }(*c, failed, other), "pending");
    }
    while (c->in_flight() < 8) co_await sleep_for(1ms);
    auto t0 = clock_type::now();
    server.kill();
    while (failed + other < 8 && clock_type::now() - t0 < 2s) co_await sleep_for(1ms);
    EXPECT_EQ(failed, 8);
    EXPECT_EQ(other, 0);
    EXPECT_LT(clock_type::now() - t0, 1s);  // at once, not at the 3 s deadline
    EXPECT_FALSE(c->connected());
    response down = co_await c->command("PING");
    EXPECT_EQ(down.status, outcome::disconnected);  // refused at once, never queued
    co_await sleep_for(100ms);                      // a few failed connects
    EXPECT_TRUE(server.start());
    EXPECT_TRUE(co_await wait_until_connected(*c));
    response up = co_await c->command("PING");
    EXPECT_EQ(up.status, outcome::ok);
    EXPECT_EQ(c->connects(), 2u);
  });
  ASSERT_TRUE(obs::init_logging(obs::log_options{}));  // back to stderr before log_text goes
  const std::string logs = log_text.str();
  auto count = [&](std::string_view what) {
    std::size_t n = 0;
    for (auto at = logs.find(what); at != std::string::npos; at = logs.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("redis connected"), 2u) << logs;
  EXPECT_EQ(count("redis disconnected"), 1u) << logs;
  EXPECT_EQ(count("redis connect failed"), 1u) << logs;  // the rest of the failed run is at debug
  EXPECT_NE(logs.find("failed_attempts="), std::string::npos) << logs;
  EXPECT_EQ(logs.find("INCR"), std::string::npos);  // no line per command
  EXPECT_EQ(counter_value(*metrics_, "sluice_redis_commands_total", "command", "disconnected"), 9);
}

TEST_F(RedisClient, InFlightBoundRefusesAtOnce) {
  redis_server server;
  ASSERT_TRUE(server.running());
  settings s = local(server.port());
  s.max_in_flight = 4;
  auto c = make(s);
  drive([&]() -> task<void> {
    EXPECT_TRUE(co_await wait_until_connected(*c));
    int ok = 0;
    for (int i = 0; i < 4; ++i) {
      tasks_.spawn(io_.get_executor(), [](connection& conn, int i, int& ok) -> task<void> {
        response r;
        if (i == 0) {
          r = co_await conn.command("DEBUG", "SLEEP", "0.1");
        } else {
          r = co_await conn.command("PING");
        }
        if (r.ok()) ++ok;
      }(*c, i, ok), "filler");
    }
    while (c->in_flight() < 4) co_await sleep_for(1ms);
    auto t0 = clock_type::now();
    response over = co_await c->command("PING");
    EXPECT_EQ(over.status, outcome::overloaded);
    EXPECT_LT(clock_type::now() - t0, 20ms);
    while (ok < 4 && clock_type::now() - t0 < 2s) co_await sleep_for(1ms);
    EXPECT_EQ(ok, 4);
    EXPECT_TRUE((co_await c->command("PING")).ok());
  });
  EXPECT_EQ(counter_value(*metrics_, "sluice_redis_commands_total", "command", "overloaded"), 1);
}

TEST_F(RedisClient, AuthWithPasswordFromTheEnvironment) {
  redis_server server({"--requirepass", "s3cret-pw"});
  ASSERT_TRUE(server.running());
  ::setenv("SLUICE_TEST_REDIS_PASSWORD", "s3cret-pw", 1);
  options o;
  o.url = "redis://127.0.0.1:" + std::to_string(server.port()) + "/2";
  o.password_env = "SLUICE_TEST_REDIS_PASSWORD";
  auto resolved = o.resolve();
  ASSERT_TRUE(resolved) << resolved.err().message;
  ::unsetenv("SLUICE_TEST_REDIS_PASSWORD");
  settings good = *resolved;
  good.backoff_min = 10ms;
  good.backoff_max = 50ms;
  settings wrong = good;
  wrong.server.password = "not-it";
  settings none = good;
  none.server.password.clear();
  auto c = make(good);
  auto w = make(wrong);
  auto n = make(none);
  drive([&]() -> task<void> {
    EXPECT_TRUE(co_await wait_until_connected(*c));
    EXPECT_TRUE((co_await c->command("SET", "in-db-2", "x")).ok());
    response db = co_await c->command("CLIENT", "INFO");
    EXPECT_NE(db.value.str.find("db=2"), std::string::npos) << db.value.describe();
    co_await sleep_for(150ms);
    EXPECT_FALSE(w->connected());  // WRONGPASS at AUTH
    EXPECT_FALSE(n->connected());  // NOAUTH at the preamble's PING
    EXPECT_EQ((co_await w->command("PING")).status, outcome::disconnected);
  });
}

TEST_F(RedisClient, HungServerIsDroppedAfterTheStallTimeout) {
  redis_server server;
  ASSERT_TRUE(server.running());
  settings s = local(server.port());
  s.command_timeout = 30ms;
  s.stall_timeout = 150ms;
  s.connect_timeout = 100ms;  // a stopped server still completes TCP connects (the backlog), never the preamble
  auto c = make(s);
  drive([&]() -> task<void> {
    EXPECT_TRUE(co_await wait_until_connected(*c));
    server.pause();
    EXPECT_EQ((co_await c->command("PING")).status, outcome::timeout);
    EXPECT_TRUE(c->connected());  // one late reply is not a dead server
    co_await sleep_for(200ms);
    EXPECT_EQ((co_await c->command("PING")).status, outcome::timeout);  // the oldest waits 230 ms now
    co_await sleep_for(20ms);
    EXPECT_FALSE(c->connected());
    EXPECT_EQ(c->in_flight(), 0u);
    server.resume();
    EXPECT_TRUE(co_await wait_until_connected(*c));
    EXPECT_TRUE((co_await c->command("PING")).ok());
    EXPECT_EQ(c->connects(), 2u);
  });
}

TEST_F(RedisClient, CancelledCallerGetsCancelledAndLaterRepliesStayMatched) {
  redis_server server;
  ASSERT_TRUE(server.running());
  auto c = make(local(server.port()));
  drive([&]() -> task<void> {
    EXPECT_TRUE(co_await wait_until_connected(*c));
    outcome seen = outcome::ok;
    bool ended = false;
    tasks_.spawn(
        io_.get_executor(),
        [](connection& conn, outcome& seen, bool& ended) -> task<void> {
          response r = co_await conn.command("DEBUG", "SLEEP", "0.1");
          seen = r.status;
          ended = true;
        }(*c, seen, ended),
        "cancelled", true);
    while (c->in_flight() == 0) co_await sleep_for(1ms);
    auto t0 = clock_type::now();
    tasks_.cancel();
    while (!ended) co_await sleep_for(1ms);
    EXPECT_EQ(seen, outcome::cancelled);
    EXPECT_LT(clock_type::now() - t0, 80ms);
    response r = co_await c->command("ECHO", "after");
    EXPECT_EQ(r.value.str, "after");
  });
}

// A server that answers the preamble's PING, then sends bytes that are not RESP.
task<void> garbage_server(tcp::acceptor& acceptor, int& accepted) {
  for (;;) {
    error_code ec;
    tcp::socket s = co_await acceptor.async_accept(ec_out(ec));
    if (ec) co_return;
    ++accepted;
    char buf[512];
    co_await s.async_read_some(net::buffer(buf), ec_out(ec));
    if (ec) continue;
    co_await net::async_write(s, net::buffer(std::string_view("+PONG\r\n")), ec_out(ec));
    co_await s.async_read_some(net::buffer(buf), ec_out(ec));
    if (ec) continue;
    co_await net::async_write(s, net::buffer(std::string_view("?what\r\n")), ec_out(ec));
    co_await s.async_read_some(net::buffer(buf), ec_out(ec));  // until the client hangs up
  }
}

TEST_F(RedisClient, ProtocolErrorFailsTheCommandAndRemakesTheConnection) {
  tcp::acceptor acceptor(io_, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
  int accepted = 0;
  tasks_.spawn(io_.get_executor(), garbage_server(acceptor, accepted), "garbage server");
  auto c = make(local(acceptor.local_endpoint().port()));
  drive([&]() -> task<void> {
    EXPECT_TRUE(co_await wait_until_connected(*c));
    response r = co_await c->command("GET", "k");
    EXPECT_EQ(r.status, outcome::protocol_error);
    EXPECT_TRUE(co_await wait_until_connected(*c));
    EXPECT_EQ(c->connects(), 2u);
    EXPECT_EQ(accepted, 2);
    acceptor.close();
  });
  EXPECT_EQ(counter_value(*metrics_, "sluice_redis_commands_total", "command", "protocol_error"), 1);
}

TEST_F(RedisClient, TlsWithAVerifiedCertificate) {
  // A self-signed certificate for "localhost", trusted by the client's context.
  const std::string dir = ::testing::TempDir() + "sluice-redis-tls-" + std::to_string(::getpid());
  const std::string cert = dir + "/cert.pem", key = dir + "/key.pem";
  const std::string gen = "mkdir -p " + dir + " && openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost"
                          " -addext subjectAltName=DNS:localhost -keyout " + key + " -out " + cert + " >/dev/null 2>&1";
  ASSERT_EQ(std::system(gen.c_str()), 0);
  redis_server server({"--tls-cert-file", cert, "--tls-key-file", key, "--tls-ca-cert-file", cert,
                       "--tls-auth-clients", "no"},
                      true);
  ASSERT_TRUE(server.running());
  ssl::context trusting(ssl::context::tls_client);
  trusting.load_verify_file(cert);
  ssl::context untrusting(ssl::context::tls_client);  // no CA: the handshake must fail
  auto url = parse_url("rediss://localhost:" + std::to_string(server.port()));
  ASSERT_TRUE(url);
  settings s = local(server.port());
  s.server = *url;
  metrics_ = std::make_shared<metrics>(std::vector<script>{});
  auto good = std::make_shared<connection>(io_.get_executor(), s, std::vector<script>{}, metrics_, &trusting);
  auto bad = std::make_shared<connection>(io_.get_executor(), s, std::vector<script>{}, metrics_, &untrusting);
  for (auto& c : {good, bad}) {
    c->start(tasks_);
    conns_.push_back(c);
  }
  drive([&]() -> task<void> {
    EXPECT_TRUE(co_await wait_until_connected(*good));
    for (int i = 0; i < 50; ++i) {
      response r = co_await good->command("ECHO", std::to_string(i));
      EXPECT_EQ(r.value.str, std::to_string(i));
    }
    EXPECT_FALSE(bad->connected());
  });
  std::system(("rm -rf " + dir).c_str());
}

TEST(RedisClientPool, OneConnectionPerWorkerThread) {
  redis_server server;
  ASSERT_TRUE(server.running());
  runtime::loop_pool pool(3);
  runtime::task_group tasks("redis-pool-test");
  client redis(pool, local(server.port()), {script::make("incr", "return redis.call('INCR', KEYS[1])")});
  ASSERT_EQ(redis.size(), 3u);
  pool.start();
  redis.start(tasks);
  std::atomic<int> done{0}, good{0};
  for (std::size_t i = 0; i < pool.size(); ++i) {
    tasks.spawn(pool.context(i).get_executor(), [](connection& c, std::atomic<int>& done, std::atomic<int>& good) -> task<void> {
      if (co_await wait_until_connected(c)) {
        for (int j = 0; j < 100; ++j) {
          const std::string_view keys[] = {"shared"};
          response r = co_await c.run(0, keys, {});
          if (r.ok()) ++good;
        }
      }
      ++done;
    }(redis.on(i), done, good), "worker");
  }
  const auto deadline = clock_type::now() + 10s;
  while (done < 3 && clock_type::now() < deadline) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(done.load(), 3);
  EXPECT_EQ(good.load(), 300);
  for (const auto& f : redis.metrics_collectable()->Collect()) {
    if (f.name == "sluice_redis_connected") {
      EXPECT_EQ(f.metric.at(0).gauge.value, 3);
    }
  }
  EXPECT_EQ(counter_value(*redis.metrics_collectable(), "sluice_redis_commands_total", "incr", "ok"), 300);
  redis.stop();
  pool.release();
  EXPECT_TRUE(pool.wait_for(std::chrono::milliseconds(5000)));
  pool.stop();
  EXPECT_EQ(tasks.size(), 0u);
}

}  // namespace
}  // namespace sluice::redis
