// The request story, phase by phase in the order a request meets them. Each phase either hands the
// request on or answers it (an error, a refusal); the dispatcher (dispatcher.cpp) calls the phases
// a route needs, and every request, however it ends, reaches its finish() exactly once there.
#include "proxy/pipeline.hpp"

#include "proxy/outcomes.hpp"
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

}  // namespace

pipeline::pipeline(net::any_io_executor ex, const shared_config& cfg, upstream::ssl::context* tls)
    : cfg_(cfg), ending_(cfg.svc), uploads_(cfg.proxy.max_upload_bytes),
      relay_{cfg.svc.streams, cfg.svc.live_streams, cfg.svc.drain, cfg.svc.secrets,
             static_cast<std::size_t>(cfg.proxy.stream_buffer_initial), static_cast<std::size_t>(cfg.proxy.stream_buffer)},
      tls_(tls) {
  for (std::size_t i = 0; i < cfg.router.size(); ++i)
    clients_.push_back(std::make_unique<upstream::client>(ex, cfg.upstream, cfg.router.at(i).target, tls));
}

std::optional<error> pipeline::parse(request_context& ctx, const http::request& req) {
  const std::string_view target = path_without_query(req);
  const route_entry* r = find_route(target);
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
  // The upload and the upstream request live on the heap, not in this frame, which lasts as long
  // as the stream: the request is given back before a stream is relayed, and only the upload
  // routes have an upload.
  std::unique_ptr<client_upload> upload;  // an upload route's body, read as it goes upstream
  if (ctx.streamed && ctx.streamed->upload && ctx.socket) {
    upload = std::make_unique<client_upload>(*ctx.socket);
    ctx.upload = upload.get();
  }
  auto call = std::make_unique<upstream_call>(
      make_upstream_call(req, ctx.request_id, ctx.stream, cfg_.svc.keys == nullptr, may_inject));
  if (ctx.streamed) pass_content_headers(call->req, req);
  call->key_counts_tokens = key_counts_tokens;
  exchange x;
  co_await run_attempts(ctx, *call, x);
  ctx.upload = nullptr;
  if (upload && upload->failure()) co_return co_await refuse_upload(ctx, *upload->failure());
  if (ctx.cancel.cancelled()) {
    ctx.end.outcome = obs::outcome::cancelled;
    ctx.end.reason = to_string(ctx.cancel.reason());
    ctx.end.attempts = x.attempts;
    co_return;
  }
  if (!ctx.contract || ctx.stream || !ctx.contract->keeps_request_body()) {  // kept for a structured-output retry
    call->req.body().clear();
    call->req.body().shrink_to_fit();
    std::string().swap(call->alternate_body);
  }
  if (!x.response) co_return co_await send_failure(ctx, x);
  if (ctx.streamed && !x.body) co_return co_await relay_body(ctx, x);
  if (x.is_sse()) {
    // Nothing of either request is needed while the stream runs: give their headers back now
    // (they would otherwise stay allocated for the stream's whole life).
    req = http::request{};
    const bool usage_injected = call->usage_injected;
    call.reset();
    co_return co_await relay_stream(ctx, x, usage_injected);
  }
  co_await answer_whole(ctx, x, *call);
}

}  // namespace sluice::proxy
