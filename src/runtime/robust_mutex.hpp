// robust_mutex: a pthread mutex for memory shared between processes (a runtime::shared_segment):
// process-shared and robust, so a process killed while holding it does not wedge the others. The
// next locker learns that the owner died (lock() returns true) and must repair what the lock
// guards before unlocking; the mutex is usable again after that. Never destroyed (it lives in
// shared memory until the mapping goes).
#pragma once

#include <pthread.h>

#include <cerrno>
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

 private:
  pthread_mutex_t mu_;
};

}  // namespace sluice::runtime
