// proxy::request_cancel, the one way a request ends early: the first reason sticks, waits bound to
// its slot end at once, and the upstream exchange's abort handle is tripped.
#include <gtest/gtest.h>

#include <chrono>

#include "proxy/cancel.hpp"

using namespace sluice;
using namespace sluice::proxy;
using namespace std::chrono_literals;

namespace {
task<void> paused(duration d, request_cancel& c, int& result) {
  result = (co_await pause(d, c)) ? 1 : 0;
}
}  // namespace

TEST(request_cancel, the_first_reason_sticks_and_trips_the_upstream) {
  request_cancel c;
  EXPECT_FALSE(c.cancelled());
  c.cancel(cancel_reason::none);  // not a reason
  EXPECT_FALSE(c.cancelled());
  c.cancel(cancel_reason::deadline);
  c.on_peer_gone();
  EXPECT_EQ(c.reason(), cancel_reason::deadline);
  EXPECT_FALSE(c.client_gone());
  EXPECT_TRUE(c.upstream().aborted());
  EXPECT_EQ(c.ending().code, errc::upstream_timeout);
}

TEST(request_cancel, a_client_that_leaves_ends_a_pause_at_once) {
  net::io_context io;
  request_cancel c;
  int result = -1;
  net::co_spawn(io, paused(std::chrono::duration_cast<duration>(1h), c, result), net::detached);
  io.poll();
  EXPECT_EQ(result, -1) << "still waiting";
  c.on_peer_gone();
  io.poll();
  EXPECT_EQ(result, 0);
  EXPECT_TRUE(c.client_gone());
  EXPECT_EQ(to_string(c.reason()), "client_gone");
}

TEST(request_cancel, a_cancelled_request_does_not_wait_at_all) {
  net::io_context io;
  request_cancel c;
  c.cancel(cancel_reason::draining);
  int result = -1;
  net::co_spawn(io, paused(std::chrono::duration_cast<duration>(1h), c, result), net::detached);
  io.poll();
  EXPECT_EQ(result, 0);
  EXPECT_EQ(c.ending().code, errc::overloaded);
}

TEST(request_cancel, an_uncancelled_pause_runs_its_course) {
  net::io_context io;
  request_cancel c;
  int result = -1;
  net::co_spawn(io, paused(duration(0), c, result), net::detached);
  io.run();
  EXPECT_EQ(result, 1);
}
