// The in-process home of background responses (--queue memory, the embedded default; lost on
// restart): each response's record (its status, its response object, its request, and the log of
// its stream's events by sequence number) and the bounded queue of jobs waiting for a worker
// slot. Thread-safe: a record is written by the one job that runs it and read by any number of
// followers on any thread (one mutex per record); the store's map and queue take one short mutex.
// Records are shared_ptr: a follower keeps its record readable after the store dropped it.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "core/error.hpp"
#include "jobs/options.hpp"
#include "jobs/wakeup.hpp"
#include "runtime/asio.hpp"
#include "runtime/watchdog.hpp"

namespace sluice::jobs {

// The Responses API's statuses.
enum class status : std::uint8_t { queued, in_progress, completed, failed, cancelled, incomplete };
std::string_view to_string(status s) noexcept;
constexpr bool is_final(status s) noexcept { return s != status::queued && s != status::in_progress; }

// One stored stream event: its sequence number and its SSE text ("event: t\ndata: {...}\n\n").
struct stored_event {
  std::int64_t seq;
  std::string text;
};

// The SSE text of a stored error event (the Responses API's `error` event: type, sequence_number,
// code, message, param), as the record of a failed response ends: the one place it is made.
std::string error_event_text(std::int64_t seq, std::string_view code, std::string_view message);

// What a follower reads in one go.
struct event_batch {
  std::vector<std::string> events;  // SSE texts, in sequence order
  std::vector<std::int64_t> seqs;   // their sequence numbers
  std::int64_t last_seq = -1;       // the last one's sequence number (unchanged `after` when none)
  bool finished = false;            // the log is complete: nothing follows these
  bool missing = false;             // (--queue redis) the response is gone: expired, or Redis lost it
  status state = status::queued;    // (--queue redis) its status when read
};

class memory_store;

// What a new record starts with.
struct new_response {
  std::string id;
  bool background = true;
  std::string object;  // the response object (status queued)
  std::vector<std::pair<std::string, std::string>> headers;  // the client's request headers, as the job replays them
  std::string body;     // the body the job sends upstream
  std::string owner;    // the tenant that created it (docs/security.md: a key's identity, never its name)
  // (--queue redis) A foreground job: the API path it runs ("/v1/chat/completions", ...) and whose
  // answer, head and body pieces, is its event log for the front relaying it; "": a response.
  std::string wire;
  // The upstream's own id for the response, when known: what a later request's
  // previous_response_id naming this response becomes on its way upstream.
  std::string upstream_id;
};

class response_record {
 public:
  response_record(new_response r, std::uint64_t max_bytes);
  response_record(const response_record&) = delete;
  response_record& operator=(const response_record&) = delete;

  const std::string& id() const noexcept { return id_; }
  bool background() const noexcept { return background_; }
  // Only the client key that created a response may read or cancel it.
  const std::string& owner() const noexcept { return owner_; }
  // The request as the job runs it: the client's headers and the body sent upstream.
  const std::vector<std::pair<std::string, std::string>>& headers() const noexcept { return headers_; }
  const std::string& body() const noexcept { return body_; }
  // A foreground job's API path (new_response::wire); "" for a response.
  const std::string& wire() const noexcept { return wire_; }
  // The upstream's id for this response ("" until its first lifecycle event); any thread.
  std::string upstream_id() const;
  // Learned from the first lifecycle event; later calls change nothing.
  void set_upstream_id(std::string_view id);

  status state() const;
  // The response object as it stands (JSON).
  std::string object() const;
  // The events after sequence number `after` (-1: from the start), at most `max_bytes` of them
  // (at least one when any is there).
  event_batch read_after(std::int64_t after, std::size_t max_bytes) const;
  // Registers a follower's wakeup, notified on every append and at the end.
  void follow(wakeup::handle h);
  // The same for a watcher that is not a client (the mirror into Redis): not one of followers().
  void watch(wakeup::handle h);
  // Followers whose wakeup still lives.
  std::size_t followers() const;
  // Bytes this record holds (request, object, events), as the store counts them.
  std::uint64_t bytes() const;

  // --- the job's side (one thread: the job's) ---
  // The job took it: queued -> in_progress. False when it was cancelled meanwhile.
  bool start(std::string object);
  // Appends an event; false when it would pass response-max-bytes (nothing appended).
  bool append(std::int64_t seq, std::string text);
  // The last sequence number appended (-1: none).
  std::int64_t last_seq() const;
  // A new response object (status unchanged unless `s` is given).
  void set_object(std::string object, std::optional<status> s = std::nullopt);
  // The end: its final status and object (a cancelled record keeps `cancelled`). Wakes every follower.
  void finish(status s, std::string object);
  // Who stops the running job when it is cancelled (called once, on any thread); the job sets it
  // when it starts and clears it when it ends.
  void on_cancel(std::function<void()> stop);

  // --- anyone's ---
  // Cancels: a queued record is finished `cancelled` at once (the caller takes it out of the
  // queue); a running one has its job stopped (the job then finishes it `cancelled`). False when
  // it had finished already.
  bool cancel(std::string cancelled_object);
  bool cancel_requested() const;
  runtime::steady::time_point finished_at() const;
  // (--queue redis) When a follower on another process last read this response, as its mirror
  // learned from Redis (the epoch: never). Any thread.
  void followed_elsewhere(runtime::steady::time_point at) noexcept;
  runtime::steady::time_point followed_elsewhere_at() const noexcept;

 private:
  friend class memory_store;
  void notify_followers_locked();
  void account(std::int64_t delta);  // tells the store of a change in bytes

  const std::string id_;
  const bool background_;
  const std::vector<std::pair<std::string, std::string>> headers_;
  const std::string body_;
  const std::string owner_;
  const std::string wire_;
  const std::uint64_t max_bytes_;
  memory_store* store_ = nullptr;  // set by the store; the store outlives its records' writers

  mutable std::mutex mu_;
  status status_ = status::queued;
  bool cancel_requested_ = false;
  std::string object_;
  std::string upstream_id_;
  std::deque<stored_event> events_;
  std::uint64_t event_bytes_ = 0;
  std::vector<wakeup::handle> followers_;
  std::vector<wakeup::handle> watchers_;
  std::function<void()> stop_;
  runtime::steady::time_point finished_at_{};
  std::atomic<runtime::steady::time_point::rep> followed_elsewhere_{0};
};

// Why a background request could not be stored or queued.
enum class store_refusal : std::uint8_t { none, queue_full, store_full, duplicate };

class memory_store {
 public:
  explicit memory_store(const options& opts);
  memory_store(const memory_store&) = delete;
  memory_store& operator=(const memory_store&) = delete;

  // A new record; `queue` puts it in the job queue too (a background response). Finished records
  // are dropped oldest first to make room within memory-responses / memory-response-bytes.
  std::variant<std::shared_ptr<response_record>, store_refusal> create(new_response r, bool queue);
  std::shared_ptr<response_record> find(std::string_view id) const;

  // The next queued job, or null. A runner that found none waits on its wakeup (wait_for_job).
  std::shared_ptr<response_record> take_job();
  // Registers an idle runner: the next enqueue wakes one of them.
  void wait_for_job(wakeup::handle h);
  // Cancels `id`: queued -> out of the queue and `cancelled`; running -> its job stopped. Null
  // when unknown; the record otherwise (whatever its state).
  std::shared_ptr<response_record> cancel(std::string_view id, const std::function<std::string(const response_record&)>& cancelled_object);

  // Drops finished records older than response-retention; returns how many.
  std::size_t sweep(runtime::steady::time_point now);

  std::size_t stored() const;
  std::uint64_t stored_bytes() const noexcept { return bytes_.load(std::memory_order_relaxed); }
  std::size_t waiting() const;
  // Runners registered as idle (at most one entry per live runner).
  std::size_t idle_runners() const;
  std::uint64_t evicted() const noexcept { return evicted_.load(std::memory_order_relaxed); }
  const options& settings() const noexcept { return opts_; }
  // Told of every id as it is stored (true) and dropped (false), under the store's lock: a pod's
  // index of which worker holds what (response_index.hpp). Set before the store is used.
  void set_index(std::function<void(std::string_view id, bool stored)> f) { index_ = std::move(f); }

 private:
  friend class response_record;
  // Drops finished records, oldest first, until one more of `need` bytes fits; false if it cannot.
  bool make_room_locked(std::uint64_t need);
  void erase_locked(std::unordered_map<std::string, std::shared_ptr<response_record>>::iterator it);

  const options opts_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<response_record>> records_;
  std::deque<std::shared_ptr<response_record>> queue_;
  std::vector<wakeup::handle> idle_runners_;
  std::atomic<std::uint64_t> bytes_{0};
  std::atomic<std::uint64_t> evicted_{0};
  std::function<void(std::string_view, bool)> index_;
};

}  // namespace sluice::jobs
