#include "jobs/options.hpp"

namespace sluice::jobs {

void options::register_options(config::option_table& table) {
  table.add("worker-max-jobs", "background jobs this process runs at once (one upstream stream each)", worker_max_jobs)
      .add("jobs-max-waiting", "background jobs that may wait for a worker slot before new ones are refused",
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
                memory_response_bytes);
}

result<void> options::validate() const {
  if (worker_max_jobs == 0) return error::make(errc::bad_request, "worker-max-jobs must be at least 1");
  if (response_max_bytes < 1024) return error::make(errc::bad_request, "response-max-bytes must be at least 1KiB");
  if (response_retention <= duration::zero()) return error::make(errc::bad_request, "response-retention must be positive");
  if (orphan_timeout < duration::zero()) return error::make(errc::bad_request, "orphan-timeout must not be negative");
  if (memory_responses == 0) return error::make(errc::bad_request, "memory-responses must be at least 1");
  if (memory_response_bytes < response_max_bytes)
    return error::make(errc::bad_request, "memory-response-bytes must be at least response-max-bytes");
  return ok;
}

}  // namespace sluice::jobs
