// proxy::job_runner: what the queue's worker (redis_worker) needs of a thread's pipeline, and no
// more: running one started job into its record. Implemented by pipeline (pipeline.hpp), so that
// redis_worker.cpp never includes the whole pipeline. Call on the runner's own thread.
#pragma once

#include <memory>

#include "jobs/response_store.hpp"
#include "runtime/asio.hpp"

namespace sluice::proxy {

class job_runner {
 public:
  virtual ~job_runner() = default;
  // A background job or a recorded response's job (already started: in_progress), through the
  // same attempt loop and relay as a client's request; returns once the record is final.
  virtual task<void> run_job(std::shared_ptr<jobs::response_record> rec) = 0;
  // A foreground job (rec->wire()): the answer's head and body pieces into its record.
  virtual task<void> run_wire_job(std::shared_ptr<jobs::response_record> rec) = 0;
};

}  // namespace sluice::proxy
