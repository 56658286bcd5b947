// wakeup: a wait that another thread ends. The untimed wait (an idle job slot's) ends only when
// notified or cancelled, never on its own; a notification before the wait is kept for it.
#include <gtest/gtest.h>

#include <atomic>
#include <exception>
#include <memory>
#include <optional>
#include <thread>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include "jobs/wakeup.hpp"

using namespace sluice;
using namespace sluice::jobs;

namespace {

struct waited {
  std::optional<bool> notified;  // set when the wait ended: true when a notification ended it
};

task<void> wait_into(wakeup& w, std::shared_ptr<waited> out) { out->notified = co_await w.wait(); }

void spawn_wait(net::io_context& io, wakeup& w, const std::shared_ptr<waited>& out, net::cancellation_signal* sig = nullptr) {
  auto done = [](std::exception_ptr e) {
    if (e) std::rethrow_exception(e);
  };
  if (sig) {
    net::co_spawn(io, wait_into(w, out), net::bind_cancellation_slot(sig->slot(), done));
  } else {
    net::co_spawn(io, wait_into(w, out), done);
  }
}

// Runs the loop until the wait has ended (or nothing is left to run); whether it ended.
bool run_until_ended(net::io_context& io, const waited& out) {
  while (!out.notified && io.run_one() > 0) {
  }
  return out.notified.has_value();
}

}  // namespace

TEST(wakeup, AnUntimedWaitEndsWhenAnotherThreadNotifies) {
  net::io_context io;
  wakeup w(io.get_executor());
  auto out = std::make_shared<waited>();
  spawn_wait(io, w, out);
  io.poll();
  ASSERT_FALSE(out->notified.has_value()) << "nothing notified it yet";
  std::thread([h = w.get_handle()] { h.notify(); }).join();
  ASSERT_TRUE(run_until_ended(io, *out));
  EXPECT_TRUE(*out->notified);
}

TEST(wakeup, ANotificationBeforeTheWaitEndsItAtOnce) {
  net::io_context io;
  wakeup w(io.get_executor());
  w.notify();
  auto out = std::make_shared<waited>();
  spawn_wait(io, w, out);
  ASSERT_TRUE(run_until_ended(io, *out));
  EXPECT_TRUE(*out->notified);
}

// The idle wait has no deadline: with nothing to notify it, the context has only the wait's timer
// (due at the end of time) and runs nothing for as long as it is given.
TEST(wakeup, AnUntimedWaitDoesNotWakeOnItsOwnAndEndsWhenCancelled) {
  net::io_context io;
  wakeup w(io.get_executor());
  auto out = std::make_shared<waited>();
  net::cancellation_signal sig;
  spawn_wait(io, w, out, &sig);
  io.poll();
  EXPECT_EQ(io.run_for(std::chrono::milliseconds(50)), 0u) << "an idle wait ran a handler";
  ASSERT_FALSE(out->notified.has_value());
  sig.emit(net::cancellation_type::terminal);
  ASSERT_TRUE(run_until_ended(io, *out));
  EXPECT_FALSE(*out->notified) << "a cancelled wait was not notified";
}
