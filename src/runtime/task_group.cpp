#include "runtime/task_group.hpp"

#include <cstdio>
#include <exception>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/post.hpp>

namespace sluice::runtime {

// A cancellable task: its signal, the executor to emit it on, and its place in the group's list.
// Shared by the completion and any posted cancel(), which may run after the task ended (then it
// finds `done` set and does nothing). Everything but the links runs on `ex`.
struct task_group::node : std::enable_shared_from_this<node> {
  net::cancellation_signal signal;
  net::any_io_executor ex;
  node* prev = nullptr;
  node* next = nullptr;
  bool done = false;
};

namespace {
void report_to_stderr(std::string_view group, std::string_view task, std::string_view what) {
  std::fprintf(stderr, "sluice: bug: %.*s: %.*s escaped: %.*s\n", static_cast<int>(group.size()), group.data(),
               static_cast<int>(task.size()), task.data(), static_cast<int>(what.size()), what.data());
}
}  // namespace

task_group::task_group(std::string name, reporter report)
    : name_(std::move(name)), report_(report ? std::move(report) : reporter(report_to_stderr)) {}

task_group::~task_group() = default;

void task_group::spawn(const net::any_io_executor& ex, task<void> t, const char* what, bool cancellable) {
  live_.fetch_add(1, std::memory_order_acq_rel);
  if (!cancellable) {
    net::co_spawn(ex, std::move(t), [this, what](std::exception_ptr e) {
      if (e) report(what, e);
      finished(nullptr);
    });
    return;
  }
  auto n = std::make_shared<node>();
  n->ex = ex;
  {
    std::lock_guard lock(mu_);
    n->next = head_;
    if (head_) head_->prev = n.get();
    head_ = n.get();
  }
  auto slot = n->signal.slot();
  net::co_spawn(ex, std::move(t), net::bind_cancellation_slot(slot, [this, what, n](std::exception_ptr e) {
                  n->done = true;
                  if (e) report(what, e);
                  finished(n.get());
                }));
}

void task_group::report(const char* what, std::exception_ptr e) noexcept {
  failures_.fetch_add(1, std::memory_order_relaxed);
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    report_(name_, what, ex.what());
  } catch (...) {
    report_(name_, what, "an unknown exception");
  }
}

void task_group::finished(node* n) noexcept {
  std::lock_guard lock(mu_);
  if (n) {
    if (n->prev) n->prev->next = n->next;
    else head_ = n->next;
    if (n->next) n->next->prev = n->prev;
    n->prev = n->next = nullptr;
  }
  // Under the lock, so that a wait_for() between its check and its sleep cannot miss the wake-up.
  if (live_.fetch_sub(1, std::memory_order_acq_rel) == 1) idle_.notify_all();
}

void task_group::cancel() {
  std::lock_guard lock(mu_);
  for (node* n = head_; n; n = n->next) {
    // Linked means alive (the completion unlinks under this lock before it lets go of the node);
    // the posted function keeps it alive and leaves a task that ended meanwhile alone.
    net::post(n->ex, [p = n->shared_from_this()] {
      if (!p->done) p->signal.emit(net::cancellation_type::terminal);
    });
  }
}

bool task_group::wait_for(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return idle_.wait_for(lock, timeout, [&] { return live_.load(std::memory_order_acquire) == 0; });
}

}  // namespace sluice::runtime
