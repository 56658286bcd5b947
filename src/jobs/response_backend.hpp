// jobs::response_backend: one interface over the two places a stored response lives (docs/queue.md),
// so that the routes that retrieve, follow and cancel responses are written once: this process's
// memory_store, or (--queue redis) the fleet's redis_queue. Both return result<T>; an error means
// the store did not answer (Redis down or slow: counted under jobs' redis errors), while an unknown
// id is a value (nullopt), never an error.
//
// A backend is per worker thread (the Redis one uses that thread's connection); its calls are made
// on that thread. An event_feed belongs to one follower.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "core/error.hpp"
#include "jobs/metrics.hpp"
#include "jobs/redis_queue.hpp"
#include "jobs/response_store.hpp"
#include "jobs/wakeup.hpp"
#include "redis/connection.hpp"
#include "runtime/asio.hpp"

namespace sluice::jobs {

// What the routes read of a stored response, whichever store holds it.
struct response_view {
  std::string owner;  // the tenant that created it (a key's identity)
  bool background = false;
  bool foreground_job = false;  // a front's foreground job: no client retrieves it
  status state = status::queued;
  std::string object;
  std::string upstream_id;  // the upstream's own id for it ("" while unknown)
};

// A response object as it is once cancelled (the caller's: the object's format is the API's).
using object_edit = std::function<std::string(std::string_view object)>;

// One follower's reads of one response's events.
class event_feed {
 public:
  virtual ~event_feed() = default;
  // The events after `after`, one batch; `missing` when the response is gone under the follower.
  virtual task<result<event_batch>> read_after(std::int64_t after) = 0;
  // Until more may be there: the record's wakeup (memory) or the poll interval (Redis).
  virtual task<void> wait() = 0;
};

class response_backend {
 public:
  virtual ~response_backend() = default;
  virtual task<result<std::optional<response_view>>> find(std::string_view id) = 0;
  // Cancels `found` (what find answered for `id`): a queued job never runs, a running one is
  // stopped; its object becomes `as_cancelled` of it.
  virtual task<result<void>> cancel(std::string_view id, const response_view& found, const object_edit& as_cancelled) = 0;
  // A feed of `id`'s events for one follower.
  virtual task<std::unique_ptr<event_feed>> follow(std::string_view id) = 0;
};

// This process's store: it always answers.
class memory_backend final : public response_backend {
 public:
  // A follower takes at most `batch_bytes` of events at once and, caught up, rechecks after `recheck`.
  explicit memory_backend(memory_store& store, std::size_t batch_bytes = 64 * 1024,
                          std::chrono::milliseconds recheck = std::chrono::milliseconds(250))
      : store_(store), batch_bytes_(batch_bytes), recheck_(recheck) {}

  task<result<std::optional<response_view>>> find(std::string_view id) override;
  task<result<void>> cancel(std::string_view id, const response_view& found, const object_edit& as_cancelled) override;
  task<std::unique_ptr<event_feed>> follow(std::string_view id) override;

 private:
  memory_store& store_;
  std::size_t batch_bytes_;
  std::chrono::milliseconds recheck_;
};

// The fleet's queue (--queue redis), over this thread's Redis connection.
class redis_backend final : public response_backend {
 public:
  // This thread's connection (redis::client::current()); null: none, an error like Redis down.
  using connection_source = std::function<redis::connection*()>;
  // `counts`: where a call Redis did not answer is counted (null: not counted). A follower takes
  // at most `batch_events` events at once and, caught up, reads again after `poll`.
  redis_backend(redis_queue& queue, connection_source redis, metrics* counts, duration poll,
                std::size_t batch_events = 128)
      : queue_(queue), redis_(std::move(redis)), counts_(counts), poll_(poll), batch_events_(batch_events) {}

  task<result<std::optional<response_view>>> find(std::string_view id) override;
  task<result<void>> cancel(std::string_view id, const response_view& found, const object_edit& as_cancelled) override;
  task<std::unique_ptr<event_feed>> follow(std::string_view id) override;

 private:
  class feed;
  error failed(metrics::redis_op op) const;

  redis_queue& queue_;
  connection_source redis_;
  metrics* counts_;
  duration poll_;
  std::size_t batch_events_;
};

}  // namespace sluice::jobs
