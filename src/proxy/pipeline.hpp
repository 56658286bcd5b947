// proxy::pipeline: the request story of one worker thread, as phases in call order (pipeline.cpp):
// parse, authenticate and limit, admit, exchange (the attempt loop, attempts.cpp), respond (a
// relayed stream or a whole answer, respond.cpp). The dispatcher above it (dispatcher.hpp) calls
// the phases a route needs and ends the request (request_ending); beside it, and never calling
// back into it: the probes (probes.hpp), stored and background responses (stored_responses), a
// front's foreground jobs (queued_front) and the answers every route gives (answers.hpp). A job
// runs through the same phases (job_runner, run_job.cpp). Owns that thread's upstream clients
// (and so their keep-alive pools); everything shared is read-only or thread-safe.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "http/connection.hpp"
#include "proxy/answers.hpp"
#include "proxy/attempts.hpp"
#include "proxy/responses/job_runner.hpp"
#include "proxy/options.hpp"
#include "proxy/relay/relay.hpp"
#include "proxy/request_context.hpp"
#include "proxy/services.hpp"
#include "proxy/shared_config.hpp"
#include "proxy/request_ending.hpp"
#include "proxy/streamed_routes.hpp"
#include "proxy/structured/structured_output.hpp"
#include "routing/router.hpp"
#include "runtime/watchdog.hpp"
#include "upstream/client.hpp"

namespace sluice::proxy {

namespace bhttp = boost::beast::http;

class job_downstream;

// Held for the whole upstream exchange: the per-key slot, then the global slot (+ memory).
struct admission_ticket {
  std::optional<admission::key_permit> key;
  admission::permit slot;
};

class pipeline final : public job_runner {
 public:
  pipeline(net::any_io_executor ex, const shared_config& cfg, upstream::ssl::context* tls);

  // --- the phases a route goes through, in order (pipeline.cpp; the dispatcher calls them) ---
  // Route, method, body: fills ctx or returns the 400/404/405 to answer.
  std::optional<error> parse(request_context& ctx, const http::request& req);
  // Client key and its limits; answers the 401/429 itself (false).
  task<bool> authenticate(request_context& ctx, const http::request& req, admission_ticket& t);
  // A slot from the bounded queue (or the memory shed); answers the refusal itself (false).
  task<bool> admit(request_context& ctx, admission_ticket& t);
  // The attempt loop, then the answer: an error, a relayed stream or a whole body.
  task<void> forward(request_context& ctx, http::request& req, bool key_counts_tokens);
  // GET /v1/realtime: keys, limits, a slot and an upstream, then the WebSocket relay
  // (serve_realtime.cpp, realtime_relay.hpp).
  task<void> serve_realtime(request_context& ctx, http::request& req);

  // A job's request through the phases into its downstream (run_job.cpp; job_runner: the
  // responses module runs background, recorded and foreground jobs through it).
  task<void> run_job_in(job_downstream& sink, std::shared_ptr<jobs::response_record> rec, http::request& req,
                        std::string request_id) override;

  // The upload routes' bodies stream (streamed_routes.hpp): the connection's body policy.
  const http::body_policy* uploads() const noexcept { return &uploads_; }
  // The watchdog of this pipeline's thread (owned by its http::server); relays register with it.
  void set_watchdog(runtime::watchdog* w) noexcept { watchdog_ = w; }

 private:
  // --- the attempt loop (attempts.cpp) ---
  task<void> run_attempts(request_context& ctx, upstream_call& call, exchange& x);
  // An upstream for the next attempt, holding while every candidate is busy; false: stop (x says
  // why: a failure to send, or the request was cancelled).
  task<bool> pick_or_hold(request_context& ctx, exchange& x, attempt_state& st);
  task<attempt_outcome> attempt(request_context& ctx, upstream_call& call, exchange& x);

  // --- answers (respond.cpp) ---
  // (send_error, refuse and send_json are answers.hpp's free functions.)
  task<void> answer_whole(request_context& ctx, exchange& x, upstream_call& call);
  task<void> relay_stream(request_context& ctx, exchange& x, bool usage_injected);
  // A streamed route's answer relayed as bytes, whatever its type (relay_body.cpp); and the
  // answer to an upload whose client side failed.
  task<void> relay_body(request_context& ctx, exchange& x);
  task<void> refuse_upload(request_context& ctx, const error& e);
  // A finished stream: the upstream's health and budget, and how the request ended.
  void account_stream(request_context& ctx, exchange& x, const relay_result& result);
  // Structured outputs on a whole 2xx answer: the verdict and, under `retry`, new exchanges while
  // it is invalid; `status`/`body` become the last attempt's (respond_structured.cpp).
  task<whole_check> check_whole_answer(request_context& ctx, const output_contract& c, upstream_call& call,
                                       unsigned& status, std::string& body);

  const shared_config& cfg_;
  request_ending ending_;  // a job's request ends here (a client's ends at the dispatcher)
  upload_policy uploads_;
  relay_context relay_;  // what each stream's sse_relay takes of the services
  upstream::ssl::context* tls_;  // the upstream clients' (and a Realtime session's) TLS context
  std::vector<std::unique_ptr<upstream::client>> clients_;  // one per upstream, this thread's pools
  runtime::watchdog* watchdog_ = nullptr;
};

}  // namespace sluice::proxy
