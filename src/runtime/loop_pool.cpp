#include "runtime/loop_pool.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace sluice::runtime {

loop_pool::loop_pool(std::size_t threads) {
  if (threads == 0) threads = 1;
  for (std::size_t i = 0; i < threads; ++i) {
    // Each io_context is driven by exactly one thread, and every I/O object is used only on the
    // thread of the context it belongs to (other threads post: admission wake-ups, reloads, the
    // drain, a handed-over connection's fd). So the reactor's per-descriptor locks guard nothing
    // and are off (UNSAFE_IO, ADR 0033); the scheduler's queue and the reactor's registrations keep
    // theirs, since posts come from other threads. One thread per context also lets the scheduler
    // skip waking other threads (UNSAFE_IO implies Asio's one_thread_).
    contexts_.push_back(std::make_unique<net::io_context>(BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO));
    guards_.emplace_back(contexts_.back()->get_executor());
  }
}

namespace {
thread_local std::size_t current_index = loop_pool::none;
}

loop_pool::~loop_pool() { stop(); }

std::size_t loop_pool::this_thread_index() noexcept { return current_index; }

void loop_pool::start() {
  for (std::size_t i = 0; i < contexts_.size(); ++i) {
    threads_.emplace_back([this, i, c = contexts_[i].get()] {
      current_index = i;
      c->run();
      std::lock_guard lock(mu_);
      ++finished_;
      cv_.notify_all();
    });
  }
}

void loop_pool::release() {
  for (auto& g : guards_) g.reset();
}

void loop_pool::stop() {
  for (auto& ctx : contexts_) ctx->stop();
  join();
}

bool loop_pool::wait_for(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [this] { return finished_ >= threads_.size(); });
}

void loop_pool::join() {
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

std::size_t default_threads() {
  auto n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
}

std::size_t raise_fd_limit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0;
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
  }
  return rl.rlim_cur;
}

std::size_t fd_soft_limit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0;
  return static_cast<std::size_t>(rl.rlim_cur);
}

std::size_t read_rss_bytes(int pid) {
  std::string path = pid == 0 ? "/proc/self/statm" : "/proc/" + std::to_string(pid) + "/statm";
  std::ifstream in(path);
  std::size_t size = 0, resident = 0;
  if (!(in >> size >> resident)) return 0;
  return resident * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace sluice::runtime
