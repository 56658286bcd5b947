// The dispatcher: a request's route, the module that serves it, and its one ending. The phases
// themselves are the pipeline's (pipeline.cpp); stored, background and queued responses are the
// responses module's (proxy/responses/).
#include "proxy/dispatcher.hpp"

#include "proxy/adapters/messages_dialect.hpp"
#include "proxy/answers.hpp"
#include "proxy/outcomes.hpp"
#include "proxy/probes.hpp"
#include "proxy/request_id.hpp"
#include "proxy/responses/job_sink.hpp"
#include "proxy/responses/redis_worker.hpp"
#include "proxy/route_parse.hpp"

namespace sluice::proxy {

namespace {

// While draining or retiring, every client is asked to reconnect (to another replica) after this
// response.
bool keep_alive(const http::request& req, const drain_state& drain) noexcept {
  return req.keep_alive() && !drain.draining.load(std::memory_order_relaxed) &&
         !drain.retiring.load(std::memory_order_relaxed);
}

// A client's Responses stream that is recorded for resume (store-streams, not store: false).
bool records_stream(const request_context& ctx, const shared_config& cfg) noexcept {
  return ctx.which == api::responses && ctx.route == obs::route::responses && ctx.stream && ctx.store &&
         !ctx.background && ctx.response_id.empty() && cfg.svc.responses && cfg.jobs && cfg.jobs->store_streams;
}

// Without a keys file: the tenant of the credential the client sent ("" with none: anonymous).
std::string credential_tenant(const http::request& req) {
  auto it = req.find(bhttp::field::authorization);
  if (it == req.end()) return {};
  const auto credential = admission::bearer_credential(it->value());
  return credential.empty() ? std::string{} : admission::tenant_of_credential(credential);
}

// The rejection reason of a request that could not be read.
obs::reject_reason reject_reason_of_read(const error& e, http::framing_refusal framing) noexcept {
  switch (framing) {
    case http::framing_refusal::none: break;
    case http::framing_refusal::request_line_too_long: return obs::reject_reason::request_line_too_long;
    case http::framing_refusal::too_many_header_fields: return obs::reject_reason::too_many_headers;
    default: return obs::reject_reason::bad_framing;
  }
  if (e.code == errc::request_timeout) return obs::reject_reason::header_timeout;
  if (e.code == errc::payload_too_large || e.code == errc::header_too_large) return obs::reject_reason::too_large;
  return obs::reject_reason::bad_request;
}

// What a request cost in tokens, for the client key's tpm: the usage the upstream reported; without
// one, the prompt estimate plus one token per content event; nothing when no upstream answered it
// with a success (an error answer is not charged by OpenAI's accounting either).
std::uint64_t tokens_used(const request_context& ctx) noexcept {
  const auto& end = ctx.end;
  if (end.upstream.empty() || end.status / 100 != 2) return end.tokens_in + end.tokens_out;
  if (end.tokens_in != 0) return end.tokens_in + end.tokens_out;
  return ctx.prompt_estimate + end.tokens_out;
}

constexpr const char* worker_role_only =
    "This process is a worker (--role worker): it runs jobs and serves only /healthz, /readyz and /metrics; send "
    "requests to a front.";

bool is_probe(obs::route r) {
  return r == obs::route::healthz || r == obs::route::readyz || r == obs::route::metrics;
}

// Gives the request its client back once it has been served (a recorded stream's recorder stood
// between them).
struct restore_conn {
  request_context& ctx;
  http::downstream* client;
  ~restore_conn() { ctx.conn = client; }
};

}  // namespace

dispatcher::dispatcher(net::any_io_executor ex, const shared_config& cfg, upstream::ssl::context* tls)
    : cfg_(cfg), ending_(cfg.svc), pipeline_(std::move(ex), cfg, tls), responses_(cfg), queued_(cfg, responses_) {}

// Kept to a small coroutine frame: this frame, like every frame on the way to the relay, lives as
// long as the stream (GCC gives every temporary of every co_await its own slot), so the phases with
// many awaits live in their own coroutines.
task<bool> dispatcher::handle(http::request& req, http::connection& conn) {
  request_context ctx(conn, req.version());
  ctx.socket = &conn;
  ctx.request_id = request_id_of(req);
  ctx.trace.begin(req, ending_.trace_ratio());
  ctx.bytes_in = req.body().size();
  ctx.keep_alive = keep_alive(req, cfg_.svc.drain);
  if (is_messages_request(req)) co_await serve_messages(ctx, req);
  else co_await serve(ctx, req);
  if (ctx.handed_over) co_return false;  // the other worker serves (and counts) it
  if (conn.body_streamed()) ctx.bytes_in = conn.body_bytes_read();
  ending_.finish(ctx);
  co_return ctx.keep_alive && ctx.end.written;
}

task<bool> dispatcher::handle_admin(http::request& req, http::connection& conn) {
  request_context ctx(conn, req.version());
  ctx.request_id = request_id_of(req);
  ctx.bytes_in = req.body().size();
  ctx.keep_alive = keep_alive(req, cfg_.svc.drain);
  // Nothing but the probes is even parsed here: a completion request's body is not looked at.
  const std::string_view target = path_without_query(req);
  const bool probe = target == "/healthz" || target == "/readyz" || target == "/metrics";
  std::optional<error> bad;
  if (!probe) bad = error::make(errc::not_found, "This address (admin-listen) serves only /healthz, /readyz and /metrics.");
  else bad = pipeline_.parse(ctx, req);
  if (bad) co_await send_error(ctx, *bad);
  else co_await serve_probe(ctx, cfg_);
  ending_.finish(ctx);
  co_return ctx.keep_alive && ctx.end.written;
}

task<void> dispatcher::reject(const error& e, http::connection& conn) {
  // A request that could not be read (400/408/413/414/431): answered, logged and counted like any
  // other, on the connection's last response.
  request_context ctx(conn, 11);
  ctx.request_id = request_id_or_new(conn.failed_request_id());
  ctx.trace.begin(http::request{}, ending_.trace_ratio());
  const auto why =
      conn.failed_upload_cap() ? obs::reject_reason::upload_too_large : reject_reason_of_read(e, conn.failed_refusal());
  co_await refuse(ctx, e, why);
  ctx.end.outcome = obs::outcome::client_error;  // the client's request was broken, not refused
  ending_.finish(ctx);
}

// The answers given before a request goes anywhere, in their own coroutine: its frame, with the
// errors and strings of each answer (GCC gives every temporary of every co_await its own slot),
// is gone before serve()'s frame settles in for the stream's life.
task<bool> dispatcher::answered_first(request_context& ctx, http::request& req) {
  if (auto bad = pipeline_.parse(ctx, req)) {
    co_await send_error(ctx, *bad);
  } else if (!cfg_.proxy.serves(ctx.route)) {
    co_await refuse(ctx, error::make(errc::not_found, "The route " + ctx.path + " is not enabled on this gateway."),
                    obs::reject_reason::route_disabled);
  } else if (is_probe(ctx.route)) {
    co_await serve_probe(ctx, cfg_);
  } else if (cfg_.jobs && !cfg_.jobs->serves_clients()) {
    co_await send_error(ctx, error::make(errc::not_found, worker_role_only));
  } else if (auto objects = claim_objects_upstream(ctx, cfg_.router, cfg_.svc.keys != nullptr)) {
    co_await refuse(ctx, *objects, obs::reject_reason::stored_objects);
  } else {
    co_return false;
  }
  co_return true;
}

// Kept one coroutine on the way to the relay, with no answer's temporaries in its frame: the
// early answers are answered_first()'s, the recording's set-up and end are plain functions.
task<void> dispatcher::serve(request_context& ctx, http::request& req) {
  const bool answered = co_await answered_first(ctx, req);
  if (answered) co_return;
  if (ctx.which == api::realtime) co_return co_await pipeline_.serve_realtime(ctx, req);
  const restore_conn restore{ctx, ctx.conn};
  std::unique_ptr<recording_downstream> recorded = start_recording(ctx);
  // From here until the answer is written, a client that goes away cancels the request at once,
  // in whatever phase it is: queued, held, backing off, exchanging or streaming (a recorded
  // stream runs on while someone follows it, or for orphan-timeout).
  auto watch = ctx.conn->watch_peer(ctx.cancel);
  admission_ticket ticket;
  if (!co_await pipeline_.authenticate(ctx, req, ticket)) co_return;
  // Without a keys file, what a request stores or reads back belongs to the credential it
  // presents (two hashes: only for the requests that store or read).
  const bool stores_or_reads = recorded || ctx.background || !ctx.response_id.empty() || !ctx.previous_response_id.empty();
  if (!cfg_.svc.keys && stores_or_reads) ctx.tenant = credential_tenant(req);
  // A response the gateway stored under its own id continues upstream under the upstream's.
  if (!ctx.previous_response_id.empty()) co_await responses_.map_previous_response(ctx, req);
  if (recorded) own_recording(*recorded, ctx.tenant);
  if (!ctx.response_id.empty()) co_return co_await responses_.serve(ctx, req);
  if (ctx.background) co_return co_await responses_.create_background(ctx, req);
  if (cfg_.svc.queue && !cfg_.jobs->runs_jobs() && !ctx.streamed) {
    // A front of a fleet (--queue redis, --role front): a worker runs it; queue-depth and
    // queue-timeout hold for the fleet's queue instead of this process's slots.
    co_await queued_.forward(ctx, req);
  } else {
    if (!co_await pipeline_.admit(ctx, ticket)) co_return;
    co_await pipeline_.forward(ctx, req, ticket.key && ticket.key->reserved_tokens() != 0);
  }
  // The key's token reservation settles to what the request used (the permit's end tells the
  // shared store, or the local bucket).
  if (ticket.key) ticket.key->used_tokens(tokens_used(ctx));
  if (recorded) end_recording(*recorded, ctx.end.reason);
}

std::unique_ptr<recording_downstream> dispatcher::start_recording(request_context& ctx) const {
  // A client's Responses stream is recorded as it is relayed, so that it can be resumed
  // (background.cpp, docs/queue.md): its writes go through the recorder to the client.
  if (!records_stream(ctx, cfg_)) return nullptr;
  auto recorded = std::make_unique<recording_downstream>(*ctx.conn, *cfg_.svc.responses, cfg_.jobs->orphan_timeout);
  ctx.conn = recorded.get();
  return recorded;
}

void dispatcher::own_recording(recording_downstream& recorded, const std::string& tenant) const {
  recorded.recorder().set_owner(tenant);
  // --queue redis: resumable on any front, not only here.
  if (auto* w = cfg_.svc.queue_worker)
    recorded.recorder().on_open([w](const std::shared_ptr<jobs::response_record>& rec) { w->mirror_recorded(rec); });
}

void dispatcher::end_recording(recording_downstream& recorded, std::string_view reason) const {
  recorded.conclude(reason);
  if (const auto& rec = recorded.recorder().record(); rec && cfg_.svc.jobs) cfg_.svc.jobs->stream_recorded(rec->state());
}

task<void> dispatcher::serve_messages(request_context& ctx, http::request& req) {
  messages_downstream messages(*ctx.conn, ctx);
  http::downstream* const client = ctx.conn;
  ctx.conn = &messages;
  ctx.messages_api = true;
  ctx.route = obs::route::messages;
  if (auto bad = adopt_messages_request(req)) co_await send_error(ctx, *bad);
  else co_await serve(ctx, req);
  ctx.conn = client;
}

}  // namespace sluice::proxy
