// robust_mutex across real processes: a holder that is stopped (not dead) never lets go, so
// lock_within gives up after its patience instead of holding the waiter (an event loop) for as
// long as the holder stays stopped; once the holder is killed, the next locker learns that it died.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

#include "runtime/robust_mutex.hpp"
#include "runtime/shared_segment.hpp"

using namespace sluice;
using namespace std::chrono_literals;
using within = runtime::robust_mutex::within;

namespace {

TEST(RobustMutex, AStoppedHolderMakesLockWithinGiveUpAndADeadOneIsRepaired) {
  runtime::shared_segment<runtime::robust_mutex> mu;
  int locked[2];
  ASSERT_EQ(::pipe(locked), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // takes the lock, says so, and stops inside it
    mu->lock();
    const char c = 1;
    if (::write(locked[1], &c, 1) != 1) ::_exit(1);
    ::raise(SIGSTOP);
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(locked[0], &c, 1), 1);
  int st = 0;
  ASSERT_EQ(::waitpid(child, &st, WUNTRACED), child);
  ASSERT_TRUE(WIFSTOPPED(st));

  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(mu->lock_within(50ms), within::busy);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 50ms);

  ::kill(child, SIGKILL);
  ASSERT_EQ(::waitpid(child, &st, 0), child);
  EXPECT_EQ(mu->lock_within(10s), within::owner_died);
  mu->unlock();
  EXPECT_EQ(mu->lock_within(10s), within::locked);
  mu->unlock();
  ::close(locked[0]);
  ::close(locked[1]);
}

}  // namespace
