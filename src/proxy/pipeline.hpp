// proxy::pipeline: the request story of one worker thread, as phases in call order (pipeline.cpp):
// parse, authenticate and limit, admit, exchange (the attempt loop, attempts.cpp), respond (a
// relayed stream or a whole answer, respond.cpp), finish (one log line and one count per request,
// finish.cpp). The probe endpoints sit beside it (probes.cpp). Owns that thread's upstream clients
// (and so their keep-alive pools); everything shared is read-only or thread-safe.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "http/server.hpp"
#include "proxy/attempts.hpp"
#include "proxy/job_runner.hpp"
#include "proxy/options.hpp"
#include "proxy/relay.hpp"
#include "proxy/request_context.hpp"
#include "proxy/services.hpp"
#include "proxy/streamed_routes.hpp"
#include "proxy/structured_output.hpp"
#include "routing/router.hpp"
#include "runtime/watchdog.hpp"
#include "upstream/client.hpp"

namespace sluice::proxy {

namespace bhttp = boost::beast::http;

class job_downstream;

// Read-only after start-up; shared by every worker thread's pipeline.
struct shared_config {
  const options& proxy;
  const upstream::options& upstream;
  routing::router& router;  // the upstreams (targets, keys, circuits, pacing) and the pick
  services& svc;
  // Structured outputs: the schema-* settings and the process-wide compiled-schema cache (null: off).
  const schema_options* schema = nullptr;
  schema::schema_cache* schemas = nullptr;
  // Background responses and stored streams (docs/queue.md); null: off.
  const jobs::options* jobs = nullptr;
};

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

  // A worker slot for background jobs (background.cpp): takes jobs from the store while it is not
  // draining, one at a time; spawned worker-max-jobs times across the threads.
  task<void> run_jobs(jobs::memory_store& store);
  // One job, already started (in_progress), run on this pipeline's thread into its record through
  // the same attempt loop and relay as a client's request; returns once the record is final.
  // (--queue redis: redis_worker takes the jobs and calls this, through job_runner.)
  task<void> run_job(std::shared_ptr<jobs::response_record> rec) override;
  // A foreground job (rec->wire(): --queue redis, a front's client waits on it), run the same way
  // into its record as the answer's head and body pieces (wire_job.hpp).
  task<void> run_wire_job(std::shared_ptr<jobs::response_record> rec) override;

  // This thread's client for upstream i (its keep-alive pool).
  upstream::client& upstream_client(std::size_t i = 0) noexcept { return *clients_.at(i); }
  // The watchdog of this pipeline's thread (owned by its http::server); relays register with it.
  void set_watchdog(runtime::watchdog* w) noexcept { watchdog_ = w; }

 private:
  // --- the phases (pipeline.cpp) ---
  task<void> serve(request_context& ctx, http::request& req);
  // POST /v1/messages: serve() in the Anthropic dialect (messages_dialect.hpp).
  task<void> serve_messages(request_context& ctx, http::request& req);
  // Route, method, body: fills ctx or returns the 400/404/405 to answer.
  std::optional<error> parse(request_context& ctx, const http::request& req);
  // A client's Responses stream that is recorded for resume (store-streams, not store: false).
  bool records_stream(const request_context& ctx) const noexcept;
  // Client key and its limits; answers the 401/429 itself (false).
  task<bool> authenticate(request_context& ctx, const http::request& req, admission_ticket& t);
  // A slot from the bounded queue (or the memory shed); answers the refusal itself (false).
  task<bool> admit(request_context& ctx, admission_ticket& t);
  // The attempt loop, then the answer: an error, a relayed stream or a whole body.
  task<void> forward(request_context& ctx, http::request& req, bool key_counts_tokens);
  // The one place a request is logged and counted (finish.cpp).
  void finish(request_context& ctx) noexcept;
  // Its spans to the exporter, when it was sampled or failed (finish.cpp; trace_spans.hpp).
  void export_trace(const request_context& ctx, runtime::steady::time_point end) noexcept;
  // The share of the traces this gateway starts that are sampled (0 without an exporter).
  double trace_ratio() const noexcept;

  // --- the attempt loop (attempts.cpp) ---
  task<void> run_attempts(request_context& ctx, upstream_call& call, exchange& x);
  // An upstream for the next attempt, holding while every candidate is busy; false: stop (x says
  // why: a failure to send, or the request was cancelled).
  task<bool> pick_or_hold(request_context& ctx, exchange& x, attempt_state& st);
  task<attempt_outcome> attempt(request_context& ctx, upstream_call& call, exchange& x);
  // A 401/403 to the gateway's own key: the exchange ends with the gateway's 502.
  void refuse_gateway_key(exchange& x);

  // --- answers (respond.cpp) ---
  task<void> send_error(request_context& ctx, const error& e, const bhttp::fields* extra = nullptr);
  task<void> refuse(request_context& ctx, const error& e, obs::reject_reason why, const bhttp::fields* extra = nullptr);
  task<void> send_json(request_context& ctx, bhttp::status status, std::string body, std::string_view content_type);
  task<void> send_failure(request_context& ctx, exchange& x);
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
  task<bool> write_stream_head(request_context& ctx, exchange& x);
  // Structured outputs on a whole 2xx answer: the verdict and, under `retry`, new exchanges while
  // it is invalid; `status`/`body` become the last attempt's (respond_structured.cpp).
  task<whole_check> check_whole_answer(request_context& ctx, const output_contract& c, upstream_call& call,
                                       unsigned& status, std::string& body);

  // A job's request through forward() into `sink`, stopped by the record's cancel.
  task<void> run_job_in(job_downstream& sink, std::shared_ptr<jobs::response_record> rec, http::request& req,
                        std::string request_id);
  // --queue redis, --role front: a client's request as a foreground job, its answer relayed from
  // the job's log (queued_forward.cpp).
  task<void> forward_queued(request_context& ctx, http::request& req);
  task<void> relay_queued(request_context& ctx, const std::string& id);

  // --- background responses (background.cpp) ---
  // POST /v1/responses with background: the job queued, its object answered (or its stream followed).
  task<void> create_background(request_context& ctx, http::request& req);
  task<void> refuse_background(request_context& ctx, jobs::store_refusal why, std::uint64_t waiting);
  // previous_response_id naming a response this gateway stored (under its own id, for this
  // tenant) becomes the upstream's id for it in the body; any other id goes on as it is.
  task<void> map_previous_response(request_context& ctx, http::request& req);
  // --queue redis: the same, the response and its job in Redis; `sealed`: sealed_credential's.
  task<void> create_queued(request_context& ctx, jobs::new_response r, std::string sealed);
  // The client's Authorization where a job's upstream needs it (pass-through: no client keys, and
  // an upstream without a key of its own); "" otherwise. Kept in-process only.
  std::string upstream_credential(const http::request& req) const;
  // --queue redis: upstream_credential sealed for job `id` (credential_seal), "" when none is
  // needed; an error when one is needed and the fleet has no queue secret (never stored in clear).
  result<std::string> sealed_credential(const http::request& req, std::string_view id) const;
  task<void> serve_queued(request_context& ctx, const http::request& req);
  task<void> follow_queued(request_context& ctx, std::string id, std::int64_t after);
  // A follow's event-stream head (false: the client left) and the drain's in-band end.
  task<bool> open_event_stream(request_context& ctx);
  // One batch of a follow written; what the follow does next.
  enum class follow_next : std::uint8_t { more, wait, done };
  struct follow_cursor {
    std::int64_t last;  // the last sequence number written
    std::string out;    // the write buffer, reused
  };
  task<follow_next> deliver(request_context& ctx, jobs::event_batch& batch, follow_cursor& cur);
  follow_next left_follow(request_context& ctx) noexcept;
  task<void> cut_follow(request_context& ctx, std::int64_t last);
  // GET /v1/responses/{id} (its object, or ?stream=true its events) and POST .../cancel.
  task<void> serve_stored(request_context& ctx, const http::request& req);
  // Hands the client's connection to worker process `row`, which holds the response.
  task<void> hand_over(request_context& ctx, const http::request& req, std::size_t row);
  // The events after `after`, then the live ones until the response ends.
  task<void> follow(request_context& ctx, std::shared_ptr<jobs::response_record> rec, std::int64_t after);

  // --- the probes (probes.cpp) ---
  task<void> serve_probe(request_context& ctx, const http::request& req);

  bool keep_alive(const http::request& req) const noexcept;

  // relay_queued's steps (queued_forward.cpp): they answer through send_error and refuse.
  friend class queued_relay;

  const shared_config& cfg_;
  upload_policy uploads_;
  upstream::ssl::context* tls_;  // the upstream clients' (and a Realtime session's) TLS context
  std::vector<std::unique_ptr<upstream::client>> clients_;  // one per upstream, this thread's pools
  runtime::watchdog* watchdog_ = nullptr;
};

}  // namespace sluice::proxy
