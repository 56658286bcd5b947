// proxy::dispatcher: one worker thread's request handler, above the modules that serve a request.
// It reads the route (the pipeline's parse phase, over route_parse's table) and hands the request
// to the one module that serves it: the probes (probes.hpp), a Realtime session, a stored response
// or a background job (stored_responses), a front's foreground job (queued_front), or the
// pipeline's own phases (authenticate, admit, forward). The Messages API wraps the same dispatch in
// its dialect (messages_dialect.hpp). Every request it reads, and every one it could not read, ends
// here exactly once (request_ending). Owns the thread's pipeline, which also runs the thread's jobs
// (job_runner); neither the pipeline nor the responses module calls back into it.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "http/server.hpp"
#include "proxy/pipeline.hpp"
#include "proxy/request_context.hpp"
#include "proxy/request_ending.hpp"
#include "proxy/responses/job_runner.hpp"
#include "proxy/responses/queued_front.hpp"
#include "proxy/responses/stored_responses.hpp"
#include "proxy/shared_config.hpp"
#include "runtime/watchdog.hpp"
#include "upstream/client.hpp"

namespace sluice::proxy {

class recording_downstream;

class dispatcher final : public http::request_handler {
 public:
  dispatcher(net::any_io_executor ex, const shared_config& cfg, upstream::ssl::context* tls);

  task<bool> handle(http::request& req, http::connection& conn) override;
  task<void> reject(const error& e, http::connection& conn) override;
  // The upload routes' bodies stream (streamed_routes.hpp).
  const http::body_policy* streamed_bodies() const noexcept override { return pipeline_.uploads(); }
  // A request on the admin address (admin-listen): the probes and /metrics; anything else 404.
  task<bool> handle_admin(http::request& req, http::connection& conn);

  // This thread's jobs run through its pipeline's phases (responses/job_runner.hpp).
  job_runner& jobs() noexcept { return pipeline_; }
  // The watchdog of this thread (owned by its http::server); relays register with it.
  void set_watchdog(runtime::watchdog* w) noexcept { pipeline_.set_watchdog(w); }

 private:
  // The route, then the module that serves it.
  task<void> serve(request_context& ctx, http::request& req);
  // A parse error, a disabled route, a probe, a worker-only process, a stored-object call with
  // no upstream for it: answered here (true), before serve() goes on.
  task<bool> answered_first(request_context& ctx, http::request& req);
  // POST /v1/messages: serve() in the Anthropic dialect (messages_dialect.hpp).
  task<void> serve_messages(request_context& ctx, http::request& req);
  // A Responses stream recorded for resume (null: not one): the recorder stands between the
  // request and its client; it learns its owner once the key is known, and ends with the request.
  std::unique_ptr<recording_downstream> start_recording(request_context& ctx) const;
  void own_recording(recording_downstream& recorded, const std::string& tenant) const;
  void end_recording(recording_downstream& recorded, std::string_view reason) const;

  const shared_config& cfg_;
  request_ending ending_;  // the one place a request is logged and counted
  pipeline pipeline_;
  stored_responses responses_;  // GET/cancel of stored responses, background creation
  queued_front queued_;         // a front's foreground jobs (--queue redis, --role front)
};

}  // namespace sluice::proxy
