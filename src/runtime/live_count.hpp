// live_count: how many of something are alive now (requests in flight, streams being relayed),
// held by RAII tokens, that a controlling thread can wait on to reach zero (the drain) instead of
// polling. Tokens are taken and dropped from any thread (one atomic each; the mutex only when the
// count reaches zero); the count must outlive its tokens.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <utility>

namespace sluice::runtime {

class live_count {
 public:
  class [[nodiscard]] token {
   public:
    token() noexcept = default;
    explicit token(live_count& c) noexcept : c_(&c) { c_->n_.fetch_add(1, std::memory_order_relaxed); }
    token(token&& o) noexcept : c_(std::exchange(o.c_, nullptr)) {}
    token& operator=(token&& o) noexcept {
      if (this != &o) {
        reset();
        c_ = std::exchange(o.c_, nullptr);
      }
      return *this;
    }
    token(const token&) = delete;
    token& operator=(const token&) = delete;
    ~token() { reset(); }
    void reset() noexcept {
      if (c_) std::exchange(c_, nullptr)->leave();
    }
    explicit operator bool() const noexcept { return c_ != nullptr; }

   private:
    live_count* c_ = nullptr;
  };

  live_count() = default;
  live_count(const live_count&) = delete;
  live_count& operator=(const live_count&) = delete;

  token enter() noexcept { return token(*this); }
  std::uint64_t value() const noexcept { return n_.load(std::memory_order_relaxed); }

  // Blocks until the count is zero or `deadline` passed; true when it reached zero.
  template <class Clock, class Duration>
  bool wait_zero_until(std::chrono::time_point<Clock, Duration> deadline) {
    std::unique_lock lock(mu_);
    return zero_.wait_until(lock, deadline, [&] { return n_.load(std::memory_order_acquire) == 0; });
  }

 private:
  void leave() noexcept {
    if (n_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      // Taken before notifying: a waiter between its check and its sleep holds it, so it cannot
      // miss this wake-up.
      std::lock_guard lock(mu_);
      zero_.notify_all();
    }
  }

  std::atomic<std::uint64_t> n_{0};
  std::mutex mu_;
  std::condition_variable zero_;
};

}  // namespace sluice::runtime
