// The request story, phase by phase in the order a request meets them. Each phase either hands the
// request on or answers it (an error, a refusal); every request, however it ends, reaches finish()
// exactly once, at the end of handle() (or of reject(), for requests that could not be read).
#include "proxy/pipeline.hpp"
#include "proxy/probes.hpp"

#include "http/error_response.hpp"
#include "proxy/responses/job_sink.hpp"
#include "proxy/adapters/messages_dialect.hpp"
#include "proxy/outcomes.hpp"
#include "proxy/responses/redis_worker.hpp"
#include "proxy/request_id.hpp"
#include "proxy/route_parse.hpp"
#include "proxy/upstream_request.hpp"

namespace sluice::proxy {

namespace {

// The answer's share of a request's paced token cost when it names no max_tokens; settled against
// the actual usage afterwards.
constexpr std::uint64_t default_answer_tokens = 256;

double seconds_since(runtime::steady::time_point t) {
  return std::chrono::duration<double>(runtime::steady::now() - t).count();
}

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

std::string_view path_without_query(const http::request& req) {
  std::string_view target = req.target();
  if (auto q = target.find('?'); q != std::string_view::npos) target = target.substr(0, q);
  return target;
}

struct route_entry {
  std::string_view path;
  obs::route route;
  api which;
  bhttp::verb method;
};
// Every path the gateway serves; probes are answered by serve_probe, the rest go upstream.
constexpr route_entry routes[] = {
    {"/v1/chat/completions", obs::route::chat_completions, api::chat_completions, bhttp::verb::post},
    {"/v1/completions", obs::route::completions, api::completions, bhttp::verb::post},
    {"/v1/responses", obs::route::responses, api::responses, bhttp::verb::post},
    {"/v1/embeddings", obs::route::embeddings, api::embeddings, bhttp::verb::post},
    {"/v1/moderations", obs::route::moderations, api::moderations, bhttp::verb::post},
    {"/v1/messages/count_tokens", obs::route::messages, api::count_tokens, bhttp::verb::post},
    {"/v1/models", obs::route::models, api::chat_completions, bhttp::verb::get},
    {"/v1/realtime", obs::route::realtime, api::realtime, bhttp::verb::get},
    {"/healthz", obs::route::healthz, api::chat_completions, bhttp::verb::get},
    {"/readyz", obs::route::readyz, api::chat_completions, bhttp::verb::get},
    {"/metrics", obs::route::metrics, api::chat_completions, bhttp::verb::get},
};

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

// x-ratelimit-{limit,remaining,reset}-{requests,tokens} of a client key, as OpenAI sends them.
void set_rate_headers(bhttp::fields& out, const admission::rate_headers& h) {
  auto set = [&out](std::string_view what, const admission::rate_header& v) {
    out.set("x-ratelimit-limit-" + std::string(what), std::to_string(v.limit));
    out.set("x-ratelimit-remaining-" + std::string(what), std::to_string(v.remaining));
    out.set("x-ratelimit-reset-" + std::string(what), v.reset);
  };
  if (h.requests) set("requests", *h.requests);
  if (h.tokens) set("tokens", *h.tokens);
}

std::string rate_limit_message(admission::rate_limit_kind k) {
  switch (k) {
    case admission::rate_limit_kind::concurrency: return "Too many concurrent requests on this key.";
    case admission::rate_limit_kind::tpm: return "Rate limit reached for tokens per minute on this key.";
    default: return "Rate limit reached for requests per minute on this key.";
  }
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

}  // namespace

pipeline::pipeline(net::any_io_executor ex, const shared_config& cfg, upstream::ssl::context* tls)
    : cfg_(cfg), ending_(cfg.svc), responses_(cfg), queued_(cfg, responses_), uploads_(cfg.proxy.max_upload_bytes), tls_(tls) {
  for (std::size_t i = 0; i < cfg.router.size(); ++i)
    clients_.push_back(std::make_unique<upstream::client>(ex, cfg.upstream, cfg.router.at(i).target, tls));
}


// Kept to a small coroutine frame: this frame, like every frame on the way to the relay, lives as
// long as the stream (GCC gives every temporary of every co_await its own slot), so the phases with
// many awaits live in their own coroutines.
task<bool> pipeline::handle(http::request req, http::connection& conn) {
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

task<bool> pipeline::handle_admin(http::request req, http::connection& conn) {
  request_context ctx(conn, req.version());
  ctx.request_id = request_id_of(req);
  ctx.bytes_in = req.body().size();
  ctx.keep_alive = keep_alive(req, cfg_.svc.drain);
  // Nothing but the probes is even parsed here: a completion request's body is not looked at.
  const std::string_view target = path_without_query(req);
  const bool probe = target == "/healthz" || target == "/readyz" || target == "/metrics";
  std::optional<error> bad;
  if (!probe) bad = error::make(errc::not_found, "This address (admin-listen) serves only /healthz, /readyz and /metrics.");
  else bad = parse(ctx, req);
  if (bad) co_await send_error(ctx, *bad);
  else co_await serve_probe(ctx, cfg_);
  ending_.finish(ctx);
  co_return ctx.keep_alive && ctx.end.written;
}

task<void> pipeline::reject(const error& e, http::connection& conn) {
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

task<void> pipeline::serve(request_context& ctx, http::request& req) {
  if (auto bad = parse(ctx, req)) co_return co_await send_error(ctx, *bad);
  if (!cfg_.proxy.serves(ctx.route))
    co_return co_await refuse(ctx, error::make(errc::not_found, "The route " + ctx.path + " is not enabled on this gateway."),
                              obs::reject_reason::route_disabled);
  if (is_probe(ctx.route)) co_return co_await serve_probe(ctx, cfg_);
  if (cfg_.jobs && !cfg_.jobs->serves_clients()) co_return co_await send_error(ctx, error::make(errc::not_found, worker_role_only));
  if (auto objects = claim_objects_upstream(ctx, cfg_.router, cfg_.svc.keys != nullptr))
    co_return co_await refuse(ctx, *objects, obs::reject_reason::stored_objects);
  if (ctx.which == api::realtime) co_return co_await serve_realtime(ctx, req);
  // A client's Responses stream is recorded as it is relayed, so that it can be resumed
  // (background.cpp, docs/queue.md): its writes go through the recorder to the client.
  std::unique_ptr<recording_downstream> recorded;
  http::downstream* const client = ctx.conn;
  if (records_stream(ctx, cfg_)) {
    recorded = std::make_unique<recording_downstream>(*client, *cfg_.svc.responses, cfg_.jobs->orphan_timeout);
    ctx.conn = recorded.get();
  }
  struct restore_conn {
    request_context& ctx;
    http::downstream* client;
    ~restore_conn() { ctx.conn = client; }
  } restore{ctx, client};
  // From here until the answer is written, a client that goes away cancels the request at once,
  // in whatever phase it is: queued, held, backing off, exchanging or streaming (a recorded
  // stream runs on while someone follows it, or for orphan-timeout).
  auto watch = ctx.conn->watch_peer(ctx.cancel);
  admission_ticket ticket;
  if (!co_await authenticate(ctx, req, ticket)) co_return;
  // Without a keys file, what a request stores or reads back belongs to the credential it
  // presents (two hashes: only for the requests that store or read).
  const bool stores_or_reads = recorded || ctx.background || !ctx.response_id.empty() || !ctx.previous_response_id.empty();
  if (!cfg_.svc.keys && stores_or_reads) ctx.tenant = credential_tenant(req);
  // A response the gateway stored under its own id continues upstream under the upstream's.
  if (!ctx.previous_response_id.empty()) co_await responses_.map_previous_response(ctx, req);
  if (recorded) {
    recorded->recorder().set_owner(ctx.tenant);
    // --queue redis: resumable on any front, not only here.
    if (auto* w = cfg_.svc.queue_worker)
      recorded->recorder().on_open([w](const std::shared_ptr<jobs::response_record>& rec) { w->mirror_recorded(rec); });
  }
  if (!ctx.response_id.empty()) co_return co_await responses_.serve(ctx, req);
  if (ctx.background) co_return co_await responses_.create_background(ctx, req);
  if (cfg_.svc.queue && !cfg_.jobs->runs_jobs() && !ctx.streamed) {
    // A front of a fleet (--queue redis, --role front): a worker runs it; queue-depth and
    // queue-timeout hold for the fleet's queue instead of this process's slots.
    co_await queued_.forward(ctx, req);
  } else {
    if (!co_await admit(ctx, ticket)) co_return;
    co_await forward(ctx, req, ticket.key && ticket.key->reserved_tokens() != 0);
  }
  // The key's token reservation settles to what the request used (the permit's end tells the
  // shared store, or the local bucket).
  if (ticket.key) ticket.key->used_tokens(tokens_used(ctx));
  if (recorded) {
    recorded->conclude(ctx.end.reason);
    if (const auto& rec = recorded->recorder().record(); rec && cfg_.svc.jobs) cfg_.svc.jobs->stream_recorded(rec->state());
  }
}

task<void> pipeline::serve_messages(request_context& ctx, http::request& req) {
  messages_downstream messages(*ctx.conn, ctx);
  http::downstream* const client = ctx.conn;
  ctx.conn = &messages;
  ctx.messages_api = true;
  ctx.route = obs::route::messages;
  if (auto bad = adopt_messages_request(req)) co_await send_error(ctx, *bad);
  else co_await serve(ctx, req);
  ctx.conn = client;
}

std::optional<error> pipeline::parse(request_context& ctx, const http::request& req) {
  const std::string_view target = path_without_query(req);
  const route_entry* r = nullptr;
  for (const auto& e : routes)
    if (e.path == target) r = &e;
  // Off the table (or on it with another method: GET /v1/chat/completions lists stored ones).
  if (!r || req.method() != r->method)
    if (auto beside = parse_beside_table(ctx, req, target, r != nullptr); beside.routed) return std::move(beside.bad);
  if (!r)
    return error::make(errc::not_found, "Unknown request URL: " + std::string(req.method_string()) + " " +
                                            std::string(target) + ".");
  ctx.route = ctx.messages_api ? obs::route::messages : r->route;
  ctx.which = r->which;
  ctx.path = std::string(r->path);
  if (req.method() != r->method)
    return error::make(errc::method_not_allowed, "Method " + std::string(req.method_string()) + " is not allowed on " +
                                                     std::string(r->path) + "; use " +
                                                     std::string(bhttp::to_string(r->method)) + ".");
  if (r->which == api::realtime) return adopt_realtime(ctx, req);
  if (r->method != bhttp::verb::post) return std::nullopt;

  const auto parse_start = runtime::steady::now();
  auto summary = validate_request(ctx.which, req.body());
  const double parse_s = seconds_since(parse_start);
  cfg_.svc.requests.overhead_seconds(obs::stage::parse).observe(parse_s);
  ctx.overhead_seconds += parse_s;
  if (!summary) return summary.err();
  ctx.model = summary->model;
  ctx.stream = summary->stream;
  ctx.include_usage = summary->include_usage;
  ctx.background = summary->background;
  ctx.store = summary->store;
  ctx.previous_response_id = std::move(summary->previous_response_id);
  if (ctx.background && !ctx.store)
    return error::make(errc::bad_request, "Background responses must be stored: drop store: false.", "store");
  // Paced cost before sending: about 4 bytes per prompt token, plus what the answer may use.
  ctx.prompt_estimate = summary->prompt_chars / 4;
  ctx.token_estimate = ctx.prompt_estimate + (summary->max_tokens ? summary->max_tokens : default_answer_tokens);
  if (cfg_.schemas) {  // structured outputs: policy + compiled schema, a 400 before anything goes upstream
    auto contract = make_output_contract(ctx.which, std::move(summary->output_schema),
                                         {req[schema_policy_header], req[schema_events_header]}, *cfg_.schema,
                                         *cfg_.schemas);
    if (!contract) return contract.err();
    ctx.contract = std::move(*contract);
    // Tool parameter schemas are compiled (and cached) under the same limits: a 400 naming the tool.
    if (auto tools = check_tool_schemas(summary->tool_schemas, *cfg_.schemas); !tools) return tools.err();
  }
  return std::nullopt;
}


task<bool> pipeline::authenticate(request_context& ctx, const http::request& req, admission_ticket& t) {
  auto* keys = cfg_.svc.keys;
  if (!keys) co_return true;
  const auto start = runtime::steady::now();
  auto it = req.find(bhttp::field::authorization);
  auto who = keys->authenticate_header(it == req.end() ? std::string_view{} : std::string_view(it->value()));
  if (!who) {
    // The message never repeats what the client sent.
    ctx.keep_alive = false;
    co_await refuse(ctx, error::make(errc::unauthorized, "Incorrect or missing API key. Pass a sluice client key as Bearer."),
                    obs::reject_reason::unauthorized);
    co_return false;
  }
  // Local limits decide at once; shared ones (Redis) take one round trip.
  std::optional<admission::key_decision> got = keys->try_acquire_now(*who, ctx.token_estimate);
  if (!got) got.emplace(co_await keys->acquire(*who, ctx.token_estimate));
  const double took_s = seconds_since(start);
  cfg_.svc.requests.overhead_seconds(obs::stage::ratelimit).observe(took_s);
  ctx.overhead_seconds += took_s;
  ctx.trace.admission(start, runtime::steady::now());
  if (auto* refusal = std::get_if<admission::rate_refusal>(&*got)) {
    bhttp::fields extra;
    extra.set(bhttp::field::retry_after, std::to_string(refusal->retry_after.count()));
    set_rate_headers(extra, refusal->headers);
    if (refusal->which == admission::rate_limit_kind::unavailable) {  // redis-failure-mode closed
      co_await refuse(ctx, error::make(errc::overloaded, "The gateway cannot check this key's limits right now; retry shortly."),
                      obs::reject_reason::limits_unavailable, &extra);
      co_return false;
    }
    co_await refuse(ctx, error::make(errc::rate_limited, rate_limit_message(refusal->which)),
                    obs::reject_reason::rate_limit, &extra);
    co_return false;
  }
  t.key = std::move(std::get<admission::key_permit>(*got));
  ctx.tenant = who->tenant();
  co_return true;
}

task<bool> pipeline::admit(request_context& ctx, admission_ticket& t) {
  auto& svc = cfg_.svc;
  const auto reserve = svc.admission_opts.per_stream_reservation;
  const auto start = runtime::steady::now();
  // A free slot (the common case) is taken at once, without a wait; otherwise the request queues
  // in its client key's lane (no key: the anonymous lane), cancelled by the client's watch if the
  // client leaves.
  const admission::queue_lane lane{t.key ? t.key->identity() : nullptr};
  admission::acquire_result got;
  if (auto now = svc.admission.try_admit_now(reserve, lane)) got = std::move(*now);
  else if (ctx.cancel.cancelled()) got = admission::refused{admission::refusal::cancelled};
  else got = co_await svc.admission.acquire(reserve, ctx.cancel.slot(), lane);  // no co_await in a ?: (GCC 12)
  const double took_s = seconds_since(start);
  svc.requests.overhead_seconds(obs::stage::queue).observe(took_s);
  ctx.overhead_seconds += took_s;
  ctx.trace.queue_wait(start, runtime::steady::now());
  if (auto* p = std::get_if<admission::permit>(&got)) {
    t.slot = std::move(*p);
    co_return true;
  }
  const auto& refused = std::get<admission::refused>(got);
  if (refused.why == admission::refusal::cancelled) {  // the client left while queued
    ctx.end.outcome = obs::outcome::cancelled;
    ctx.end.reason = to_string(cancel_reason::client_gone);
    co_return false;
  }
  bhttp::fields extra;
  extra.set(bhttp::field::retry_after, std::to_string(refused.retry_after.count()));
  co_await refuse(ctx, admission_error(refused.why), reject_reason_of(refused.why), &extra);
  co_return false;
}

task<void> pipeline::forward(request_context& ctx, http::request& req, bool key_counts_tokens) {
  auto in_flight = cfg_.svc.streams.streams_active().enter();
  const auto& ro = cfg_.router.settings();
  const bool may_inject = ctx.stream && !ctx.include_usage && ro.usage != routing::usage_mode::never &&
                          (ctx.which == api::chat_completions || ctx.which == api::completions) &&
                          ctx.route != obs::route::models;
  std::optional<client_upload> upload;  // an upload route's body, read as it goes upstream
  if (ctx.streamed && ctx.streamed->upload && ctx.socket) ctx.upload = &upload.emplace(*ctx.socket);
  upstream_call call = make_upstream_call(req, ctx.request_id, ctx.stream, cfg_.svc.keys == nullptr, may_inject);
  if (ctx.streamed) pass_content_headers(call.req, req);
  call.key_counts_tokens = key_counts_tokens;
  exchange x;
  co_await run_attempts(ctx, call, x);
  ctx.upload = nullptr;
  if (upload && upload->failure()) co_return co_await refuse_upload(ctx, *upload->failure());
  if (ctx.cancel.cancelled()) {
    ctx.end.outcome = obs::outcome::cancelled;
    ctx.end.reason = to_string(ctx.cancel.reason());
    ctx.end.attempts = x.attempts;
    co_return;
  }
  if (!ctx.contract || ctx.stream || !ctx.contract->keeps_request_body()) {  // kept for a structured-output retry
    call.req.body().clear();
    call.req.body().shrink_to_fit();
    std::string().swap(call.alternate_body);
  }
  if (!x.response) co_return co_await send_failure(ctx, x);
  if (ctx.streamed && !x.body) co_return co_await relay_body(ctx, x);
  if (x.is_sse()) {
    // Nothing of either request is needed while the stream runs: give their headers back now
    // (they would otherwise stay allocated for the stream's whole life).
    req = http::request{};
    call.req = upstream::request{};
    co_return co_await relay_stream(ctx, x, call.usage_injected);
  }
  co_await answer_whole(ctx, x, call);
}

}  // namespace sluice::proxy
