// proxy::pipeline: the request story of one worker thread, as phases in call order (pipeline.cpp):
// parse, authenticate and limit, admit, exchange (the attempt loop, attempts.cpp), respond (a
// relayed stream or a whole answer, respond.cpp), finish (one log line and one count per request:
// request_ending). Beside it, and never calling back into it: the probes (probes.hpp), stored and
// background responses (stored_responses), a front's foreground jobs (queued_front) and the
// answers every route gives (answers.hpp). Owns that thread's upstream clients (and so their
// keep-alive pools); everything shared is read-only or thread-safe.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "http/server.hpp"
#include "proxy/answers.hpp"
#include "proxy/attempts.hpp"
#include "proxy/responses/job_runner.hpp"
#include "proxy/options.hpp"
#include "proxy/relay/relay.hpp"
#include "proxy/request_context.hpp"
#include "proxy/services.hpp"
#include "proxy/shared_config.hpp"
#include "proxy/responses/queued_front.hpp"
#include "proxy/request_ending.hpp"
#include "proxy/responses/stored_responses.hpp"
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

class pipeline final : public http::request_handler, public job_runner {
 public:
  pipeline(net::any_io_executor ex, const shared_config& cfg, upstream::ssl::context* tls);

  task<bool> handle(http::request req, http::connection& conn) override;
  task<void> reject(const error& e, http::connection& conn) override;
  // The upload routes' bodies stream (streamed_routes.hpp).
  const http::body_policy* streamed_bodies() const noexcept override { return &uploads_; }
  // A request on the admin address (admin-listen): the probes and /metrics; anything else 404.
  task<bool> handle_admin(http::request req, http::connection& conn);

  // A job's request through the phases into its downstream (run_job.cpp; job_runner: the
  // responses module runs background, recorded and foreground jobs through it).
  task<void> run_job_in(job_downstream& sink, std::shared_ptr<jobs::response_record> rec, http::request& req,
                        std::string request_id) override;

  // The watchdog of this pipeline's thread (owned by its http::server); relays register with it.
  void set_watchdog(runtime::watchdog* w) noexcept { watchdog_ = w; }

 private:
  // --- the phases (pipeline.cpp) ---
  task<void> serve(request_context& ctx, http::request& req);
  // POST /v1/messages: serve() in the Anthropic dialect (messages_dialect.hpp).
  task<void> serve_messages(request_context& ctx, http::request& req);
  // Route, method, body: fills ctx or returns the 400/404/405 to answer.
  std::optional<error> parse(request_context& ctx, const http::request& req);
  // Client key and its limits; answers the 401/429 itself (false).
  task<bool> authenticate(request_context& ctx, const http::request& req, admission_ticket& t);
  // A slot from the bounded queue (or the memory shed); answers the refusal itself (false).
  task<bool> admit(request_context& ctx, admission_ticket& t);
  // The attempt loop, then the answer: an error, a relayed stream or a whole body.
  task<void> forward(request_context& ctx, http::request& req, bool key_counts_tokens);

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
  // GET /v1/realtime: keys, limits, a slot and an upstream, then the WebSocket relay
  // (serve_realtime.cpp, realtime_relay.hpp).
  task<void> serve_realtime(request_context& ctx, http::request& req);
  // A finished stream: the upstream's health and budget, and how the request ended.
  void account_stream(request_context& ctx, exchange& x, const relay_result& result);
  // Structured outputs on a whole 2xx answer: the verdict and, under `retry`, new exchanges while
  // it is invalid; `status`/`body` become the last attempt's (respond_structured.cpp).
  task<whole_check> check_whole_answer(request_context& ctx, const output_contract& c, upstream_call& call,
                                       unsigned& status, std::string& body);

  // (--queue redis, --role front: a client's request as a foreground job is queued_front's.)

  // (The probes are probes.hpp's serve_probe.)


  const shared_config& cfg_;
  request_ending ending_;  // the one place a request is logged and counted
  stored_responses responses_;  // GET/cancel of stored responses, background creation
  queued_front queued_;         // a front's foreground jobs (--queue redis, --role front)
  upload_policy uploads_;
  upstream::ssl::context* tls_;  // the upstream clients' (and a Realtime session's) TLS context
  std::vector<std::unique_ptr<upstream::client>> clients_;  // one per upstream, this thread's pools
  runtime::watchdog* watchdog_ = nullptr;
};

}  // namespace sluice::proxy
