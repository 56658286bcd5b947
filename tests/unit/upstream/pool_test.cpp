// The keep-alive pool's rules: bounded (the oldest makes room), newest first on the way out,
// too-old and dead connections dropped on the way. Connections here are never opened.
#include <gtest/gtest.h>

#include <chrono>

#include "upstream/connection.hpp"

using namespace sluice;
using namespace sluice::upstream;
using namespace std::chrono_literals;

namespace {
struct fixture {
  net::io_context io;
  pool p;
  std::unique_ptr<connection> make(int tag) {
    auto c = std::make_unique<connection>(io.get_executor(), 8192);
    c->idle_timeout = std::chrono::milliseconds(tag);  // a tag to tell them apart
    return c;
  }
  static int tag(const connection& c) { return static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(c.idle_timeout).count()); }
};
const auto never_dead = [](connection&) { return false; };
}  // namespace

TEST(upstream_pool, bounded_oldest_makes_room) {
  fixture f;
  f.p.max_idle = 2;
  for (int i = 1; i <= 3; ++i) f.p.put(f.make(i));
  ASSERT_EQ(f.p.idle.size(), 2u);
  EXPECT_EQ(fixture::tag(*f.p.idle[0]), 2);
  EXPECT_EQ(fixture::tag(*f.p.idle[1]), 3);
}

TEST(upstream_pool, newest_first_and_stamped_when_put) {
  fixture f;
  f.p.max_idle = 8;
  const auto before = std::chrono::steady_clock::now();
  for (int i = 1; i <= 3; ++i) f.p.put(f.make(i));
  EXPECT_GE(f.p.idle.back()->idle_since, before);
  const auto now = std::chrono::steady_clock::now();
  auto c = f.p.take(now, 30s, never_dead);
  ASSERT_TRUE(c);
  EXPECT_EQ(fixture::tag(*c), 3);
  EXPECT_EQ(f.p.idle.size(), 2u);
}

TEST(upstream_pool, too_old_and_dead_connections_are_dropped_on_the_way) {
  fixture f;
  f.p.max_idle = 8;
  for (int i = 1; i <= 4; ++i) f.p.put(f.make(i));
  f.p.idle[3]->idle_since -= 60s;  // the newest has been idle too long
  int probed = 0;
  auto dead_if_three = [&](connection& c) {
    ++probed;
    return fixture::tag(c) == 3;
  };
  auto c = f.p.take(std::chrono::steady_clock::now(), 30s, dead_if_three);
  ASSERT_TRUE(c);
  EXPECT_EQ(fixture::tag(*c), 2) << "4 too old, 3 dead: 2 is the newest usable";
  EXPECT_EQ(probed, 2) << "an aged-out one is not even probed";
  EXPECT_EQ(f.p.idle.size(), 1u) << "the skipped ones are gone";
  auto last = f.p.take(std::chrono::steady_clock::now(), 30s, never_dead);
  ASSERT_TRUE(last);
  EXPECT_FALSE(f.p.take(std::chrono::steady_clock::now(), 30s, never_dead)) << "empty";
}

TEST(upstream_pool, a_pooled_connection_gives_back_its_read_window) {
  fixture f;
  f.p.max_idle = 1;
  auto c = f.make(1);
  c->reserve_read(connection::max_read_window);
  EXPECT_EQ(c->read_window(), connection::max_read_window);
  f.p.put(std::move(c));
  EXPECT_EQ(f.p.idle.back()->read_window(), connection::initial_read_window);
}
