#include "jobs/options.hpp"

namespace sluice::jobs {

void options::register_options(config::option_table& table) {
  table.add("worker-max-jobs", "background jobs this process runs at once (one upstream stream each)", worker_max_jobs)
      .add("jobs-max-waiting", "background jobs that may wait for a worker slot before new ones are refused",
           jobs_max_waiting)
      .add_size("response-max-bytes", "bytes of stored events per response; past it the job fails",
                response_max_bytes)
      .add_duration("response-retention", "how long a finished response stays retrievable", response_retention)
      .add("memory-responses", "responses the in-process store keeps at once", memory_responses)
      .add_size("memory-response-bytes", "bytes the in-process store keeps at once (requests, objects, events)",
                memory_response_bytes);
}

result<void> options::validate() const {
  if (worker_max_jobs == 0) return error::make(errc::bad_request, "worker-max-jobs must be at least 1");
  if (response_max_bytes < 1024) return error::make(errc::bad_request, "response-max-bytes must be at least 1KiB");
  if (response_retention <= duration::zero()) return error::make(errc::bad_request, "response-retention must be positive");
  if (memory_responses == 0) return error::make(errc::bad_request, "memory-responses must be at least 1");
  if (memory_response_bytes < response_max_bytes)
    return error::make(errc::bad_request, "memory-response-bytes must be at least response-max-bytes");
  return ok;
}

}  // namespace sluice::jobs
