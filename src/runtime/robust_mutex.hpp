// robust_mutex: a pthread mutex for memory shared between processes (a runtime::shared_segment):
// process-shared and robust, so a process killed while holding it does not wedge the others. The
// next locker learns that the owner died (lock() returns true) and must repair what the lock
// guards before unlocking; the mutex is usable again after that. A holder that is stopped, not
// dead (SIGSTOP, a debugger attached), never lets go: where the lock guards more than a few
// instructions and the waiter is an event loop, lock_within() bounds the wait. Never destroyed
// (it lives in shared memory until the mapping goes).
#pragma once

#include <pthread.h>

#include <time.h>

#include <cerrno>
#include <chrono>
#include <stdexcept>

namespace sluice::runtime {

class robust_mutex {
 public:
  robust_mutex() {
    pthread_mutexattr_t a;
    ::pthread_mutexattr_init(&a);
    ::pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    ::pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    const int rc = ::pthread_mutex_init(&mu_, &a);
    ::pthread_mutexattr_destroy(&a);
    if (rc != 0) throw std::runtime_error("cannot make a process-shared mutex");
  }
  robust_mutex(const robust_mutex&) = delete;
  robust_mutex& operator=(const robust_mutex&) = delete;

  // Locks; true when the previous owner died holding it (the lock is held and made consistent:
  // repair the guarded state before unlock()).
  bool lock() noexcept {
    if (::pthread_mutex_lock(&mu_) != EOWNERDEAD) return false;
    ::pthread_mutex_consistent(&mu_);
    return true;
  }
  void unlock() noexcept { ::pthread_mutex_unlock(&mu_); }

  enum class within { locked, owner_died, busy };
  // Locks unless it stays held for `patience` (busy: not locked). owner_died as lock()'s true.
  within lock_within(std::chrono::nanoseconds patience) noexcept {
    timespec at{};
    ::clock_gettime(CLOCK_MONOTONIC, &at);
    const auto ns = static_cast<long long>(at.tv_nsec) + patience.count();
    at.tv_sec += static_cast<time_t>(ns / 1'000'000'000);
    at.tv_nsec = static_cast<long>(ns % 1'000'000'000);
    const int rc = ::pthread_mutex_clocklock(&mu_, CLOCK_MONOTONIC, &at);
    if (rc == 0) return within::locked;
    if (rc != EOWNERDEAD) return within::busy;
    ::pthread_mutex_consistent(&mu_);
    return within::owner_died;
  }

 private:
  pthread_mutex_t mu_;
};

}  // namespace sluice::runtime
