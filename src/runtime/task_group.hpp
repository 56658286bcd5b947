// task_group: the owner of spawned coroutines. spawn() starts one on an executor; when it ends, an
// exception that escaped it (a bug) is reported once, through the group's reporter, and the
// group's count drops. cancel() emits a terminal cancellation into every live task that asked for
// one (on the task's own executor); wait_for() blocks until no task is left. Thread-safe; the group
// must outlive its tasks (stop their executors, or wait, before destroying it).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include <boost/asio/cancellation_signal.hpp>

#include "runtime/asio.hpp"

namespace sluice::runtime {

class task_group {
 public:
  // Told of every escaped exception: which group, which task, what it said. The default writes one
  // line to stderr; the gateway installs its structured logger.
  using reporter = std::function<void(std::string_view group, std::string_view task, std::string_view what)>;

  explicit task_group(std::string name, reporter report = {});
  task_group(const task_group&) = delete;
  task_group& operator=(const task_group&) = delete;
  ~task_group();

  // Starts `t` on `ex`. `what` names the task in a report (a string literal). With `cancellable`,
  // the task's cancellation state is tied to the group, so cancel() reaches its waits; without it
  // (per-connection sessions: their sockets are closed instead), no slot is installed per
  // operation.
  void spawn(const net::any_io_executor& ex, task<void> t, const char* what, bool cancellable = false);

  // Emits a terminal cancellation into every live cancellable task, posted to each one's executor.
  void cancel();
  // Blocks until every task has ended or `timeout` passed; true when none is left.
  bool wait_for(std::chrono::milliseconds timeout);

  std::size_t size() const noexcept { return live_.load(std::memory_order_acquire); }
  // Exceptions that escaped a task so far.
  std::uint64_t failures() const noexcept { return failures_.load(std::memory_order_relaxed); }

 private:
  struct node;
  void report(const char* what, std::exception_ptr e) noexcept;
  void finished(node* n) noexcept;

  const std::string name_;
  reporter report_;
  std::atomic<std::size_t> live_{0};
  std::atomic<std::uint64_t> failures_{0};
  mutable std::mutex mu_;  // guards the list of cancellable tasks and the empty-wait
  std::condition_variable idle_;
  node* head_ = nullptr;  // cancellable tasks only
};

}  // namespace sluice::runtime
