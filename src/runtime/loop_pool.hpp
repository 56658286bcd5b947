// loop_pool: N threads, each running its own io_context (shared-nothing hot path: a connection,
// its upstream connection and its buffers live on one thread for their whole life).
// Construct and start on the main thread; stop() may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>

#include "runtime/asio.hpp"

namespace sluice::runtime {

class loop_pool {
 public:
  explicit loop_pool(std::size_t threads);
  ~loop_pool();
  loop_pool(const loop_pool&) = delete;
  loop_pool& operator=(const loop_pool&) = delete;

  std::size_t size() const noexcept { return contexts_.size(); }
  net::io_context& context(std::size_t i) { return *contexts_[i]; }

  // Starts the threads. Each runs its io_context until stop() (work guards keep them alive).
  void start();
  // Lets the io_contexts run out of work: releases the guards (running tasks finish).
  void release();
  // Stops every io_context now and joins the threads. Idempotent.
  void stop();
  // Waits for the threads to return (after release() once their work is done, or after stop()).
  void join();
  // Waits at most `timeout` for every thread to run out of work; true when they all did.
  bool wait_for(std::chrono::milliseconds timeout);

  // The index of the pool thread the caller runs on (its io_context's index), or `none` on a
  // thread no loop_pool started. Lets a component pick the per-thread part it owns (its Redis
  // connection) from code that has no executor at hand (a permit's destructor).
  static constexpr std::size_t none = static_cast<std::size_t>(-1);
  static std::size_t this_thread_index() noexcept;

 private:
  using guard = net::executor_work_guard<net::io_context::executor_type>;
  std::vector<std::unique_ptr<net::io_context>> contexts_;
  std::vector<guard> guards_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::size_t finished_ = 0;
};

// Threads to use when the config says 0: the number of cores (at least 1).
std::size_t default_threads();

// Raises the soft RLIMIT_NOFILE to the hard limit (thousands of streams need thousands of fds).
// Returns the new soft limit.
std::size_t raise_fd_limit();
// The soft RLIMIT_NOFILE now (0 if it cannot be read; RLIM_INFINITY as a huge number).
std::size_t fd_soft_limit();

// Resident set size of a process (self when pid == 0), in bytes; 0 if unreadable.
std::size_t read_rss_bytes(int pid = 0);

}  // namespace sluice::runtime
