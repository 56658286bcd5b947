// proxy::queued_front: a front's side of a foreground job (--queue redis, --role front; wire_job.hpp,
// docs/queue.md). The client's request is enqueued as a job, then the job's log is relayed to the
// client as the answer it is, reading the next batch only once the client took the last one. Beside
// the pipeline, which hands it the requests a front does not run itself; it answers through
// answers.hpp and never calls the pipeline.
#pragma once

#include <string>

#include "http/server.hpp"
#include "proxy/request_context.hpp"
#include "proxy/shared_config.hpp"
#include "proxy/responses/stored_responses.hpp"

namespace sluice::proxy {

class queued_front {
 public:
  // `responses`: whose sealed_credential a job carries.
  queued_front(const shared_config& cfg, const stored_responses& responses) : cfg_(cfg), responses_(responses) {}

  // The request as a foreground job, its answer relayed from the job's log (queue-depth and
  // queue-timeout bound the fleet's foreground queue).
  task<void> forward(request_context& ctx, http::request& req);

 private:
  task<void> relay(request_context& ctx, const std::string& id);

  const shared_config& cfg_;
  const stored_responses& responses_;
};

}  // namespace sluice::proxy
