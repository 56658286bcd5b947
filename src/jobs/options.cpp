#include "jobs/options.hpp"

#include <string>

namespace sluice::jobs {

std::string_view to_string(queue_backend q) noexcept { return q == queue_backend::redis ? "redis" : "memory"; }
std::string_view to_string(process_role r) noexcept {
  switch (r) {
    case process_role::front: return "front";
    case process_role::worker: return "worker";
    case process_role::both: break;
  }
  return "both";
}

void options::register_options(config::option_table& table) {
  table
      .add_custom({"queue", "where background jobs and stored responses live: memory (this process; lost on restart) or redis (needs --redis)",
                   "memory",
                   [this](std::string_view v) -> result<void> {
                     if (v == "memory") queue = queue_backend::memory;
                     else if (v == "redis") queue = queue_backend::redis;
                     else return error::make(errc::bad_request, "queue: expected memory or redis");
                     return ok;
                   }})
      .add_custom({"role", "what this process does: both (clients and jobs), front (clients only) or worker (jobs; serves probes and /metrics)",
                   "both",
                   [this](std::string_view v) -> result<void> {
                     if (v == "both") role = process_role::both;
                     else if (v == "front") role = process_role::front;
                     else if (v == "worker") role = process_role::worker;
                     else return error::make(errc::bad_request, "role: expected both, front or worker");
                     return ok;
                   }})
      .add_duration("queue-poll-interval", "--queue redis: how often a follower of a background response looks for new events, and an idle worker and a foreground relay poll while Pub/Sub is away",
                    poll_interval)
      .add_duration("queue-command-timeout",
                    "--queue redis: deadline of one queue command (redis-command-timeout is admission's, shorter)",
                    command_timeout)
      .add_duration("worker-loss-timeout",
                    "--queue redis: a running job whose process has not renewed its lease for this long is failed worker_lost",
                    worker_loss_timeout)
      .add("worker-max-jobs", "background jobs this process runs at once (one upstream stream each)", worker_max_jobs)
      .add("jobs-max-waiting", "background jobs that may wait for a job slot before new ones are refused",
           jobs_max_waiting)
      .add_size("response-max-bytes", "bytes of stored events per response; past it the job fails",
                response_max_bytes)
      .add("store-streams", "store clients' Responses streams for resume (unless the request says store: false)",
           store_streams)
      .add_duration("orphan-timeout", "how long a stored stream whose client left runs on with no one following it",
                    orphan_timeout)
      .add_duration("response-retention", "how long a finished response stays retrievable", response_retention)
      .add("memory-responses", "responses the in-process store keeps at once", memory_responses)
      .add_size("memory-response-bytes", "bytes the in-process store keeps at once (requests, objects, events)",
                memory_response_bytes)
      .add_size("redis-response-bytes",
                "--queue redis: bytes the fleet keeps in Redis for waiting jobs and finished responses; past it new jobs are refused (503)",
                redis_response_bytes)
      .add("queue-secret-env",
           "--queue redis: environment variable holding the fleet's secret that seals a client's own upstream key (pass-through) in Redis",
           queue_secret_env)
      .add_custom({"redis-eviction-check",
                   "--queue redis: when Redis's maxmemory-policy is not noeviction at start: warn (log) or refuse (do not start)",
                   "warn",
                   [this](std::string_view v) -> result<void> {
                     if (v == "warn") redis_eviction_check = eviction_check::warn;
                     else if (v == "refuse") redis_eviction_check = eviction_check::refuse;
                     else return error::make(errc::bad_request, "redis-eviction-check: expected warn or refuse");
                     return ok;
                   }});
}

result<void> options::validate() const {
  if (role != process_role::both && queue != queue_backend::redis)
    return error::make(errc::bad_request, "role " + std::string(to_string(role)) + " needs --queue redis (a memory queue is one process's)");
  if (poll_interval < std::chrono::milliseconds(1) || poll_interval > std::chrono::seconds(1))
    return error::make(errc::bad_request, "queue-poll-interval must be between 1ms and 1s");
  if (command_timeout < std::chrono::milliseconds(1) || command_timeout > std::chrono::seconds(60))
    return error::make(errc::bad_request, "queue-command-timeout must be between 1ms and 60s");
  if (worker_loss_timeout < std::chrono::milliseconds(300) || worker_loss_timeout > std::chrono::minutes(10))
    return error::make(errc::bad_request, "worker-loss-timeout must be between 300ms and 10m");
  if (worker_max_jobs == 0) return error::make(errc::bad_request, "worker-max-jobs must be at least 1");
  if (response_max_bytes < 1024) return error::make(errc::bad_request, "response-max-bytes must be at least 1KiB");
  if (response_retention <= duration::zero()) return error::make(errc::bad_request, "response-retention must be positive");
  if (orphan_timeout < duration::zero()) return error::make(errc::bad_request, "orphan-timeout must not be negative");
  if (memory_responses == 0) return error::make(errc::bad_request, "memory-responses must be at least 1");
  if (memory_response_bytes < response_max_bytes)
    return error::make(errc::bad_request, "memory-response-bytes must be at least response-max-bytes");
  if (redis_response_bytes < response_max_bytes)
    return error::make(errc::bad_request, "redis-response-bytes must be at least response-max-bytes");
  if (queue_secret_env.empty()) return error::make(errc::bad_request, "queue-secret-env must name a variable");
  return ok;
}

}  // namespace sluice::jobs
