// proxy::job_runner: what running a job needs of a thread's pipeline, and no more: one request
// through the pipeline's phases (parse, attempts, relay, finish) into a job's downstream, stopped
// by its record's cancel. Implemented by pipeline (run_job.cpp), so that the responses module never
// includes the pipeline; the ways a job is run (a memory job slot, a background job, a
// foreground wire job) are this module's free functions over it. Call on the runner's own thread.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "http/types.hpp"
#include "jobs/metrics.hpp"
#include "jobs/response_store.hpp"
#include "runtime/asio.hpp"

namespace sluice::proxy {

class job_downstream;

class job_runner {
 public:
  virtual ~job_runner() = default;
  // `req` into `sink` under `request_id`; returns once the request ended (sink.conclude called).
  virtual task<void> run_job_in(job_downstream& sink, std::shared_ptr<jobs::response_record> rec, http::request& req,
                                std::string request_id) = 0;
};

// A background job or a recorded response's job (already started: in_progress), run through the
// same attempt loop and relay as a client's request into its record's event log (job_sink);
// returns once the record is final (background.cpp). --queue redis: redis_worker calls it.
task<void> run_job(job_runner& runner, std::shared_ptr<jobs::response_record> rec);
// A foreground job (rec->wire(): --queue redis, a front's client waits on it), run the same way
// into its record as the answer's head and body pieces (wire_job.cpp).
task<void> run_wire_job(job_runner& runner, std::shared_ptr<jobs::response_record> rec);
// A job slot for background jobs (background.cpp): takes jobs from the memory store one at a
// time while `draining` is false; spawned worker-max-jobs times across the threads. `counts` may be
// null (no metrics).
task<void> run_jobs(job_runner& runner, jobs::memory_store& store, const std::atomic<bool>& draining,
                    jobs::metrics* counts);

}  // namespace sluice::proxy
