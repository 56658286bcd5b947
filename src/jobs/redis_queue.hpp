// jobs::redis_queue: background responses in Redis (--queue redis; docs/queue.md), so that fronts
// and workers can be separate processes and machines. The data layout (P = redis-key-prefix):
//
//   P{jobs}                   stream of queued background jobs (field `id`), consumer group `workers`
//   P{jobs}:fg                stream of queued foreground jobs (a client waits on each: read first)
//   P{jobs}:running           zset: response id -> when its worker's lease ends (ms, Redis's clock;
//                             worker-loss-timeout after the last renewal: the worker's heartbeat)
//   P{worker:W}:cancels       set: ids of worker W's running jobs that a client cancelled
//   P{jobs}:held              zset: id -> until when its bytes count (ms): the fleet's byte ledger
//   P{jobs}:held:bytes        hash: id -> the bytes charged to it (redis-response-bytes bounds the
//   P{jobs}:held:total        sum, kept here: waiting jobs' requests, finished responses' objects and
//                             events until their retention ends)
//   P{resp:ID}                hash: st (status), obj (response object), own (client key), bg,
//                             hdr (the request's headers, JSON, no credentials), body, sec (the
//                             client's own upstream Authorization, sealed: credential_seal; only in
//                             pass-through mode) -- these three until a worker starts the job --,
//                             sz (bytes of its events), wk (the worker running it),
//                             last (the last stored sequence number), fin (1 once final),
//                             fg (a foreground job: the API path it runs; its events are its answer),
//                             up (the upstream's id for the response, once known),
//                             nf (a foreground job: the Pub/Sub channel of the front relaying it)
//   P{notify}:jobs, P{notify}:W  Pub/Sub channels (redis_notifier): a job queued; process W's
//                             foreground jobs changed
//   P{resp:ID}:ev             stream: the response's events, entry id `<seq+1>-0`, field `t` (SSE text)
//
// A response's two keys share a hash tag, so every script touching them runs on one Cluster slot;
// the queue's keys share another. Every call needs the connection of the caller's thread
// (redis::client::current()), and answers redis_unavailable() when Redis does not: nothing throws.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jobs/response_store.hpp"
#include "redis/connection.hpp"
#include "redis/script.hpp"

namespace sluice::jobs {

// What Redis holds of a response, for GET and for a worker that took its job.
struct stored_response {
  std::string id;
  status state = status::queued;
  bool background = true;
  bool finished = false;
  std::string object;
  std::string owner;
  std::string worker;                                        // who runs it ("" while queued)
  std::vector<std::pair<std::string, std::string>> headers;  // only from load()
  std::string body;                                          // only from load()
  std::string sealed_credential;                             // only from load() (credential_seal)
  std::int64_t last_seq = -1;
  std::string wire;  // a foreground job's API path (new_response::wire); "" for a response
  std::string upstream_id;  // the upstream's id for it (new_response::upstream_id), when known
};

// A job as the consumer group delivered it.
struct queued_job {
  std::string entry;   // the stream entry's id (to acknowledge)
  std::string id;      // the response id
  std::string stream;  // the stream it came from (jobs_key or foreground_key)
};

// What a call answers when Redis did not (in time, or at all): the one error of a redis_queue call
// that returns a result; a refusal or an unknown id is a value, not an error.
error redis_unavailable();

class redis_queue {
 public:
  static constexpr std::string_view group = "workers";

  // A finished foreground job's keys last this long (its front deletes them once it relayed all).
  static constexpr std::chrono::milliseconds foreground_retention{60000};

  // `prefix`: redis-key-prefix; `worker`: this process's consumer name (unique per start);
  // `lease`: redis-lease, how long a job taken but never started stays its taker's before a claim
  // (a running job's lease is opts.worker_loss_timeout); `foreground_max_waiting`: queue-depth.
  redis_queue(std::string prefix, std::string worker, const options& opts, std::chrono::milliseconds lease,
              std::uint64_t foreground_max_waiting);

  // The scripts to register with the redis client, in order; tell the queue where they start.
  static std::vector<redis::script> scripts();
  void attach(std::size_t first_script) noexcept { first_script_ = first_script; }

  const std::string& worker() const noexcept { return worker_; }
  long long lease_ms() const noexcept { return lease_.count(); }
  // A running job's lease (worker-loss-timeout): renewed every third of it by its process.
  std::chrono::milliseconds job_lease() const noexcept {
    return std::chrono::duration_cast<std::chrono::milliseconds>(opts_.worker_loss_timeout);
  }
  const options& settings() const noexcept { return opts_; }
  std::string response_key(std::string_view id) const;
  std::string events_key(std::string_view id) const;
  std::string jobs_key() const { return prefix_ + "{jobs}"; }
  std::string foreground_key() const { return prefix_ + "{jobs}:fg"; }
  // Pub/Sub (redis_notifier): where a queued job is announced, with this payload; and the channel
  // of process `worker`, told when a foreground job it relays changes (payload: its response key).
  static constexpr std::string_view jobs_topic = "jobs";
  std::string jobs_channel() const { return prefix_ + "{notify}:jobs"; }
  std::string notify_channel(std::string_view worker) const { return prefix_ + "{notify}:" + std::string(worker); }
  std::string running_key() const { return prefix_ + "{jobs}:running"; }
  std::vector<std::string> ledger_keys() const;
  std::string cancels_key(std::string_view worker) const;

  // --- a front's side ---
  // Stores a new background response (status queued) and queues its job; a foreground job
  // (r.wire) goes to the foreground stream. store_refusal::queue_full when jobs-max-waiting
  // (foreground: queue-depth) are waiting, store_full when its bytes would take the fleet's ledger
  // past redis-response-bytes, duplicate when the id is taken; redis_unavailable() when Redis did
  // not answer. `sealed_credential` (credential_seal, or ""): stored until a worker starts the job.
  task<result<store_refusal>> create(redis::connection& c, const new_response& r, std::string_view sealed_credential = {});
  // The response's status, object, owner and worker; nullopt when unknown.
  task<result<std::optional<stored_response>>> find(redis::connection& c, std::string_view id);
  // Events after sequence number `after`, at most `count`; `finished` when the response is final and
  // nothing follows them; `missing` when it is gone. A read of a live response notes that it is
  // followed (for the process relaying it: orphan-timeout).
  task<result<event_batch>> read_after(redis::connection& c, std::string_view id, std::int64_t after, std::size_t count);
  // Cancels: a queued job is finished `cancelled` at once (its object `cancelled_object`); a running
  // one is flagged for its worker (which closes its upstream). Returns the status it had (nullopt:
  // unknown); redis_unavailable() when Redis did not answer, or did not take a running one's flag.
  task<result<std::optional<status>>> cancel(redis::connection& c, std::string_view id, const std::string& cancelled_object);
  // Jobs waiting in both streams (delivered-but-not-started ones included); nullopt when Redis did
  // not answer. `foreground`: only the foreground stream.
  task<std::optional<std::uint64_t>> waiting(redis::connection& c, bool foreground_only = false);
  // A foreground job's keys, once its front relayed all of it.
  task<void> forget(redis::connection& c, std::string_view id);
  // The bytes the fleet's ledger counts (after dropping expired entries); nullopt when Redis did not answer.
  task<std::optional<std::uint64_t>> held_bytes(redis::connection& c);

  // --- a worker's side ---
  // Creates the consumer groups (and the streams) when missing. True when they exist now.
  task<bool> ensure_group(redis::connection& c);
  // Up to `count` new jobs for this worker (never more): foreground ones first, then background.
  task<result<std::vector<queued_job>>> take(redis::connection& c, std::size_t count);
  // Up to `count` jobs delivered to some worker longer than a lease ago and never started (that
  // worker died between taking and starting them): now this worker's.
  task<std::vector<queued_job>> claim_stale(redis::connection& c, std::size_t count);
  // The job's response as its worker needs it (headers and body included); nullopt when gone.
  task<result<std::optional<stored_response>>> load(redis::connection& c, std::string_view id);
  // Takes the job: queued -> in_progress (object `object`), under this worker's lease. Only one worker
  // ever does for a response; false when it was not queued (cancelled, already taken, gone) or
  // Redis did not answer. The entry is acknowledged either way once this answers. The request
  // (body, headers, sealed credential) leaves Redis here: load() first.
  task<bool> start(redis::connection& c, const queued_job& j, const std::string& object);
  // Appends `events` (sequence number, SSE text) and, when not empty, a new object/status; `final`
  // ends the response (its keys expire after response-retention; the ledger then counts what it
  // holds, object and events, until then: one more script call). False when the response is no
  // longer this worker's to write (failed as worker_lost meanwhile, or gone); redis_unavailable()
  // when Redis did not answer.
  // `followed_ms_ago`, when given, learns how long ago a follower last read the response (set only
  // when one ever did).
  // A foreground job (`foreground`) keeps its keys foreground_retention once final.
  task<result<bool>> append(redis::connection& c, std::string_view id, const std::vector<stored_event>& events,
                            std::optional<status> st, const std::string& object, bool final,
                            std::optional<std::int64_t>* followed_ms_ago = nullptr, bool foreground = false);
  // A response this process is already writing (a client's own recorded stream): stored
  // in_progress under this process's lease, so that any front can follow and resume it, and a
  // death of this process is a worker_lost. False when Redis did not take it (away, the id is
  // taken, or redis-response-bytes is reached).
  task<bool> open(redis::connection& c, const new_response& r);
  // The upstream's id for a response this process writes, learned once its stream began.
  task<void> note_upstream_id(redis::connection& c, std::string_view id, std::string_view upstream_id);
  // The job ended here: its lease is released.
  task<void> release(redis::connection& c, std::string_view id);
  // Renews this worker's leases of `ids` (one command, sent even when `ids` is empty: true says
  // that Redis answered).
  task<bool> renew(redis::connection& c, const std::vector<std::string>& ids);
  // Ids of this worker's running jobs that clients cancelled since the last call.
  task<std::vector<std::string>> cancelled(redis::connection& c);
  // Jobs whose worker's lease ended while they ran: each ends `failed` (worker_lost) with an error
  // event for its followers. Returns how many this call failed.
  // `failed_object` makes the failed response object from the stored one, an error code and message.
  using object_editor = std::function<std::string(const std::string& object, std::string_view code, std::string_view message)>;
  task<std::size_t> reap_lost(redis::connection& c, std::size_t limit, const object_editor& failed_object);

 private:
  enum script_index : std::size_t {
    enqueue, create_hash, start_job, append_events, cancel_job, lose_job, renew_leases, expired, read_events, take_jobs,
    charge_bytes, settle_bytes, count_held
  };
  task<redis::response> run(redis::connection& c, script_index s, std::vector<std::string> keys,
                            std::vector<std::string> args);
  // The ledger's entry of `id` now holds `bytes` for `ttl` (nullopt: dropped).
  task<void> settle(redis::connection& c, std::string_view id, std::optional<std::uint64_t> bytes,
                    std::chrono::milliseconds ttl);
  // A job failed worker_lost: its charge becomes what it holds, for response-retention.
  task<void> settle_lost(redis::connection& c, std::string_view id);

  const std::string prefix_;
  const std::string worker_;
  const options opts_;
  const std::chrono::milliseconds lease_;
  const std::uint64_t foreground_max_waiting_;
  std::size_t first_script_ = 0;
};

// A string as part of a Redis key's name: letters, digits, '_' and '-' as they are, every other
// byte %XX, so no id can reach into another key's name or hash tag.
std::string redis_key_part(std::string_view s);

}  // namespace sluice::jobs
