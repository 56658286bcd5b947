// jobs::options: the bounds of background responses and their stored event logs (docs/queue.md):
// job slots, jobs waiting, bytes per response, retention, and what the in-process store may
// hold. A plain value: filled once at start-up from the option table, then copied and never changed.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "config/option_table.hpp"
#include "core/error.hpp"
#include "core/units.hpp"

namespace sluice::jobs {

// Where jobs and stored responses live: this process (lost on restart) or Redis (a fleet's).
enum class queue_backend : std::uint8_t { memory, redis };
// What this process does: accept clients (front), run jobs (worker), or both (one process).
enum class process_role : std::uint8_t { both, front, worker };
// --queue redis: what a start does when Redis may evict keys (maxmemory-policy other than noeviction).
enum class eviction_check : std::uint8_t { warn, refuse };
std::string_view to_string(queue_backend q) noexcept;
std::string_view to_string(process_role r) noexcept;

struct options {
  queue_backend queue = queue_backend::memory;  // `queue`
  process_role role = process_role::both;       // `role`
  // --queue redis: how often a follower of a background response with nothing new looks for
  // events again; an idle worker and a front relaying a foreground job are told through Pub/Sub
  // (redis_notifier) and poll at this interval only while it is away.
  duration poll_interval = std::chrono::milliseconds(20);
  // --queue redis: the deadline of one queue command. Longer than redis-command-timeout (50 ms,
  // sized so that an admission decision never waits on a stalled Redis): a burst of jobs queues
  // thousands of commands on one connection, and a queue command that times out costs more (a job
  // left for a claim after a lease, a retried append) than one that waits.
  duration command_timeout = std::chrono::seconds(1);
  // --queue redis: how long a process running jobs (or relaying recorded streams) may go unheard
  // before its running jobs are failed `worker_lost`. Its job leases are this long and renewed
  // every third of it; a reaper looks as often. Apart from redis-lease (30 s: shared limits'
  // slots, and the idle time before a job taken but never started is claimed), so that a killed
  // worker's clients hear of it within seconds without shortening the limits' leases.
  duration worker_loss_timeout = std::chrono::seconds(3);
  // Jobs this process runs at once (each is one upstream stream); a job is taken only into a free slot.
  std::uint64_t worker_max_jobs = 64;
  // Background jobs that may wait for a slot; past it, a new background request is refused at once
  // (429 jobs_queue_full, with Retry-After).
  std::uint64_t jobs_max_waiting = 10000;
  // Bytes of stored events per response; a job whose events pass it ends `failed`
  // (response_too_large) and its upstream is closed.
  std::uint64_t response_max_bytes = 4 * 1024 * 1024;
  // A client's own `stream: true` Responses stream is stored (unless `store: false`) so that it can
  // be resumed; a client that leaves does not end it while someone follows it, or for this long.
  bool store_streams = true;
  duration orphan_timeout = std::chrono::seconds(30);
  // How long a finished response stays retrievable (GET /v1/responses/{id}, a stream's resume).
  duration response_retention = std::chrono::minutes(60);
  // The in-process store (--queue memory): responses kept at once, and their bytes (request,
  // object and events). Finished ones are dropped oldest first to make room; when only live ones
  // are left a new background request is refused (503 response_store_full).
  std::uint64_t memory_responses = 10000;
  std::uint64_t memory_response_bytes = 256ull * 1024 * 1024;
  // --queue redis: the bytes the fleet holds in Redis for waiting jobs (request, headers, object)
  // and finished responses (object and events) until their retention ends, as the fleet's ledger
  // counts them; past it a new job is refused (503 response_store_full). Running responses may hold
  // up to response-max-bytes each beyond their charge (docs/queue.md: sizing).
  std::uint64_t redis_response_bytes = 1024ull * 1024 * 1024;
  // --queue redis, no client keys and an upstream without a key of its own: the client's own
  // Authorization travels to the worker sealed (AES-256-GCM) under the secret in this variable;
  // every front and worker of a fleet has the same one. Unset: such background jobs are refused.
  std::string queue_secret_env = "SLUICE_QUEUE_SECRET";
  // --queue redis: Redis must not evict (a stored response would vanish before its retention).
  eviction_check redis_eviction_check = eviction_check::warn;

  bool runs_jobs() const noexcept { return role != process_role::front; }
  bool serves_clients() const noexcept { return role != process_role::worker; }

  void register_options(config::option_table& table);
  result<void> validate() const;
};

}  // namespace sluice::jobs
