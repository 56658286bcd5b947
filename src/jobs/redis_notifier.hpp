// jobs::redis_notifier: what would otherwise be polled, told through Redis Pub/Sub (--queue redis;
// docs/queue.md, ADR 0011). The queue's scripts PUBLISH when something a process waits on
// happens: a job queued (channel P{notify}:jobs, payload "jobs": idle workers take it at once) and
// a foreground job's log grew or ended (the channel of the front relaying it, payload the job's
// response key). One subscriber connection per process; a message wakes the wakeups registered
// for its payload. Messages are hints, never the data: a waiter still reads Redis and still wakes
// on its own timeout, so a message lost while the subscriber reconnects costs latency, not
// correctness; live() tells a waiter whether it may wait long.
//
// Threading: the subscriber runs on its connection's thread; watch() and live() are safe from any
// thread (one short mutex). Lifetime: outlives its watches and the task it spawned.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "jobs/wakeup.hpp"
#include "redis/connection.hpp"
#include "runtime/task_group.hpp"

namespace sluice::jobs {

class redis_notifier {
 public:
  // `conn`: a subscriber connection (redis::client::add_subscriber), not started yet;
  // `channels`: what to subscribe to.
  redis_notifier(std::shared_ptr<redis::connection> conn, std::vector<std::string> channels);
  redis_notifier(const redis_notifier&) = delete;
  redis_notifier& operator=(const redis_notifier&) = delete;

  // The subscribe loop (re-subscribes after every reconnect), a task of `group` on the
  // connection's executor.
  void start(runtime::task_group& group);

  // Wakes `h` on every message whose payload is `topic`, while the returned guard lives.
  class watch {
   public:
    watch() = default;
    watch(redis_notifier* n, std::string topic, std::uint64_t id) : n_(n), topic_(std::move(topic)), id_(id) {}
    watch(watch&& o) noexcept : n_(std::exchange(o.n_, nullptr)), topic_(std::move(o.topic_)), id_(o.id_) {}
    watch& operator=(watch&&) = delete;
    ~watch() {
      if (n_) n_->unwatch(topic_, id_);
    }

   private:
    redis_notifier* n_ = nullptr;
    std::string topic_;
    std::uint64_t id_ = 0;
  };
  [[nodiscard]] watch watch_topic(std::string topic, wakeup::handle h);

  // Subscribed now: a message will come when something happens.
  bool live() const noexcept { return live_.load(std::memory_order_relaxed); }

 private:
  task<void> loop();
  void deliver(std::string_view payload);
  void wake_all();
  void unwatch(const std::string& topic, std::uint64_t id);

  std::shared_ptr<redis::connection> conn_;
  const std::vector<std::string> channels_;
  std::atomic<bool> live_{false};
  mutable std::mutex mu_;
  std::uint64_t next_id_ = 0;
  std::unordered_map<std::string, std::vector<std::pair<std::uint64_t, wakeup::handle>>> watches_;
};

}  // namespace sluice::jobs
