// The attempt loop: pick an upstream (or hold while every candidate is busy), one attempt on it,
// the outcome classified, and a retry, a failover or the end, all under one request deadline.
#include <charconv>
#include <random>

#include "observability/log.hpp"
#include "proxy/pipeline.hpp"

#include "proxy/adapters/anthropic_upstream.hpp"
#include "proxy/upstream_request.hpp"
#include "routing/headers.hpp"

namespace sluice::proxy {

namespace {

constexpr std::size_t max_error_body = 64 * 1024;  // an upstream's error answer, kept to pass on

std::minstd_rand& jitter_rng() {
  thread_local std::minstd_rand rng{std::random_device{}()};
  return rng;
}

double seconds_since(runtime::steady::time_point t) {
  return std::chrono::duration<double>(runtime::steady::now() - t).count();
}

// Retry-After in whole seconds, at least 1.
std::string retry_after_seconds(duration d) {
  auto s = std::chrono::ceil<std::chrono::seconds>(d).count();
  return std::to_string(std::max<std::int64_t>(s, 1));
}


// The attempt's span named to the upstream (traceparent), and the client's tracestate with it.
void set_trace_headers(upstream::request& req, const request_trace& trace, const obs::span_id& span) {
  req.set("traceparent", trace.traceparent_for(span));
  if (trace.trace_state().empty()) req.erase("tracestate");
  else req.set("tracestate", trace.trace_state());
}

// The time the exchange took to get a connection ready (pool check, or DNS + TCP + TLS), as overhead.
void count_connect(services& svc, request_context& ctx, duration d) {
  const double s = std::chrono::duration<double>(d).count();
  svc.requests.overhead_seconds(obs::stage::connect).observe(s);
  ctx.overhead_seconds += s;
}

// An attempt that brought no answer to pass on: its outcome, and the exchange's failure.
attempt_outcome failed(attempt_outcome out, attempt_kind kind, const error& e, exchange& x) {
  out.kind = kind;
  out.failure = e.code;
  out.retryable = e.retryable;
  x.failure = e;
  return out;
}

// A whole answer a streamed route reads at once (for its usage): JSON of a known, small length.
bool small_json_answer(const bhttp::fields& head) {
  constexpr std::uint64_t small = 256 * 1024;
  const std::string_view ctype = head[bhttp::field::content_type];
  if (!ctype.starts_with("application/json")) return false;
  std::uint64_t len = 0;
  const std::string_view text = head[bhttp::field::content_length];
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), len);
  return ec == std::errc{} && end == text.data() + text.size() && !text.empty() && len <= small;
}

// The upstream's rate-limit headers, in its dialect's form, to its pacer.
void observe_limits(routing::upstream_state& u, const bhttp::fields& head) {
  const auto limits = u.spec.dialect == routing::upstream_dialect::anthropic
                          ? routing::read_anthropic_ratelimit_headers(head, std::chrono::system_clock::now())
                          : routing::read_ratelimit_headers(head);
  if (limits.any()) u.pace->observe(limits, runtime::steady::now());
}


}  // namespace

void refuse_gateway_key(exchange& x) {
  // The operator's problem, not the client's: a revoked or wrong key in the config. The client
  // gets the gateway's own 502; the upstream's body, which may quote the key, is dropped.
  const auto& u = x.lease.upstream();
  obs::log_warn("upstream refused the gateway's API key: check its key-env",
                {{"upstream", std::string_view(u.spec.name)}, {"status", static_cast<std::uint64_t>(x.status)}});
  error e = error::make(errc::upstream_auth, "The upstream refused the gateway's credentials; retry later.");
  e.api_code = "upstream_auth_failed";
  x.failure = std::move(e);
  x.response.reset();
  x.body.reset();
}

bool exchange::is_sse() const {
  if (!response || status / 100 != 2) return false;
  std::string_view ctype = response->head()[bhttp::field::content_type];
  return ctype.substr(0, 17) == "text/event-stream";
}

attempt_verdict classify_attempt(const attempt_outcome& o) noexcept {
  attempt_verdict v;
  switch (o.kind) {
    case attempt_kind::cancelled: v.health = upstream_health::pending; break;
    case attempt_kind::refused: v.health = upstream_health::pending; break;  // the upstream saw nothing
    case attempt_kind::send_failed:
      v.health = upstream_health::failed;
      v.refund = o.failure == errc::upstream_connect;  // it never reached the upstream
      if (o.retryable) v.retry = o.failure == errc::upstream_timeout ? retry_reason::timeout : retry_reason::connect;
      break;
    case attempt_kind::body_failed:
      // Nothing has gone to the client yet, so a body cut short is retried like a failed send.
      v.health = upstream_health::failed;
      v.retry = o.failure == errc::upstream_timeout ? retry_reason::timeout : retry_reason::protocol;
      break;
    case attempt_kind::answered:
      if ((o.status == 401 || o.status == 403) && o.gateway_key) {
        v.health = upstream_health::failed;
        v.gateway_key_refused = true;
      } else if (o.status == 429) {
        v.retry = retry_reason::status_429;  // alive, only rate limited: its pacer holds back
      } else if (o.status >= 500) {
        v.health = upstream_health::failed;
        v.retry = retry_reason::status_5xx;
      } else if (o.sse) {
        v.health = upstream_health::pending;  // a stream reports its outcome when it ends
      }
      break;
  }
  return v;
}

bool should_retry(const attempt_verdict& v, const retry_window& w) noexcept {
  return v.retry.has_value() && w.attempts < w.max_attempts && !w.past_deadline && !w.cutting;
}

task<void> pipeline::run_attempts(request_context& ctx, upstream_call& call, exchange& x) {
  auto& rt = cfg_.router;
  const auto& ro = rt.settings();
  attempt_state st{ctx.start + ro.request_timeout, runtime::steady::now() + ro.max_hold,
                   std::vector<bool>(rt.size(), false)};
  // A stored-object route has one upstream: the account that holds its objects (ADR 0027).
  if (ctx.streamed && ctx.streamed->stores)
    for (std::size_t i = 0; i < st.tried.size(); ++i) st.tried[i] = i != ctx.objects_upstream;
  while (true) {
    if (!co_await pick_or_hold(ctx, x, st)) co_return;
    const std::size_t idx = x.lease.index();
    const attempt_outcome outcome = co_await attempt(ctx, call, x);
    if (outcome.kind == attempt_kind::cancelled) co_return;
    ctx.trace.attempt_ended(static_cast<int>(outcome.status),
                            outcome.kind != attempt_kind::answered);
    attempt_verdict v = classify_attempt(outcome);
    if (ctx.streamed && v.retry && !may_replay(ctx.streamed->method, outcome.reached)) {
      v.retry.reset();  // a POST that reached the upstream may have acted: never sent twice
      if (ctx.upload && ctx.upload->bytes() > 0 && x.failure)
        x.failure->message += " The upload was not replayed: its body had started to go upstream; send it again.";
    }
    const auto now = runtime::steady::now();
    if (v.health == upstream_health::succeeded) x.lease.succeeded();
    else if (v.health == upstream_health::failed) x.lease.failed(now);
    if (v.refund) x.lease.refund(now);
    if (v.gateway_key_refused) {
      refuse_gateway_key(x);
      co_return;
    }
    const retry_window w{x.attempts, ro.max_attempts, now >= st.deadline,
                         cfg_.svc.drain.cutting.load(std::memory_order_relaxed)};
    if (!should_retry(v, w)) co_return;  // an answer to pass on, or a failure no retry can fix
    cfg_.svc.upstreams.retried(idx, *v.retry);
    st.tried[idx] = true;
    x.lease = routing::lease{};
    // Fail over at once when another upstream is ready; otherwise back off (full jitter) before
    // the same one again. A retry-after it sent is kept by its pacer, which holds the next pick.
    if (!rt.has_ready_untried(ctx.model_for_routing(), ctx.token_estimate, st.tried, now)) {
      auto d = routing::full_jitter(ro.backoff_base, ro.backoff_cap, x.attempts - 1, jitter_rng());
      d = std::min<duration>(d, std::chrono::duration_cast<duration>(st.deadline - now));
      if (!co_await pause(d, ctx.cancel)) co_return;
    }
  }
}


task<bool> pipeline::pick_or_hold(request_context& ctx, exchange& x, attempt_state& st) {
  auto& rt = cfg_.router;
  const std::string_view model = ctx.model_for_routing();
  while (true) {
    const auto now = runtime::steady::now();
    if (now >= st.deadline) {
      if (!x.response && !x.failure)
        x.failure = error::make(errc::upstream_timeout, "the request exceeded request-timeout before an upstream answered");
      co_return false;
    }
    auto pick = rt.pick(model, ctx.token_estimate, st.tried, now);
    if (pick.picked && pick.picked.needs_confirm()) {
      // A budget shared with the other replicas: one round trip confirms the pick for the fleet.
      // Refused there, the request holds like any paced one (the view now knows how long).
      auto wait = co_await pick.picked.confirm();
      const double took_s = seconds_since(now);
      cfg_.svc.requests.overhead_seconds(obs::stage::ratelimit).observe(took_s);
      ctx.overhead_seconds += took_s;
      if (wait) {
        pick.picked = routing::lease{};
        pick.why = routing::no_pick::busy;
        pick.paced = true;
        pick.retry_at = runtime::steady::now() + *wait;
      }
    }
    if (pick.picked) {
      x.lease = std::move(pick.picked);
      co_return true;
    }
    if (pick.why == routing::no_pick::unknown_model) {
      error e = error::make(errc::not_found, "The model '" + ctx.model + "' is not served by this gateway.", "model");
      e.api_code = "model_not_found";
      x.response.reset();
      x.failure = std::move(e);
      co_return false;
    }
    const bool give_up =
        pick.why == routing::no_pick::unhealthy || pick.retry_at > st.deadline || pick.retry_at > st.hold_until;
    if (give_up) {
      if (x.response || x.failure) co_return false;  // the last attempt's answer stands
      const std::string what = model.empty() ? std::string("this gateway") : "'" + std::string(model) + "'";
      x.failure = pick.why == routing::no_pick::unhealthy
                      ? error::make(errc::overloaded, "No healthy upstream serves " + what + " right now; retry shortly.")
                  : pick.paced ? error::make(errc::rate_limited, "The upstream rate limit for " + what +
                                                                     " is spent; retry after the Retry-After delay.")
                               : error::make(errc::overloaded, "The upstreams for " + what + " are saturated; retry shortly.");
      x.failure_headers.set(bhttp::field::retry_after, retry_after_seconds(pick.retry_at - now));
      co_return false;
    }
    // Hold here while the budget refills, the engine recovers or a slot frees: better than a 429
    // from the upstream or a preemption storm on its GPU.
    const auto why = pick.paced ? hold_reason::paced : pick.engine ? hold_reason::engine : hold_reason::concurrency;
    const bool stayed = co_await pause(std::chrono::duration_cast<duration>(pick.retry_at - now), ctx.cancel);
    const double held_s = seconds_since(now);
    cfg_.svc.upstreams.held(why, held_s);
    cfg_.svc.requests.overhead_seconds(obs::stage::queue).observe(held_s);
    ctx.overhead_seconds += held_s;
    if (!stayed) co_return false;
  }
}

task<attempt_outcome> pipeline::attempt(request_context& ctx, upstream_call& call, exchange& x) {
  ++x.attempts;
  x.response.reset();  // before the send: the old response must not unregister the new connection
  x.body.reset();
  x.failure.reset();
  x.failure_headers.clear();
  x.status = 0;
  const std::size_t idx = x.lease.index();
  auto& u = x.lease.upstream();
  const auto refusal = prepare_attempt(call, u, ctx.path, ctx.model, cfg_.router.settings().usage);
  // Each attempt is a span of its own: its traceparent names it, so a retry is a sibling.
  const auto& span = ctx.trace.attempt_began(u.spec.name, u.target.host, u.target.port);
  if (refusal) {
    x.failure = *refusal;
    co_return attempt_outcome{attempt_kind::refused};
  }
  set_trace_headers(call.req, ctx.trace, span);

  const auto now = runtime::steady::now();
  const auto left = std::chrono::duration_cast<duration>(ctx.start + cfg_.router.settings().request_timeout - now);
  auto r = co_await clients_.at(idx)->send(call.req, ctx.cancel.upstream(), left, ctx.upload);
  attempt_outcome out;
  out.gateway_key = !u.authorization.empty();
  out.reached = ctx.cancel.upstream().sent();
  if (ctx.upload && ctx.upload->failure()) {  // the client's side of an upload: final, the upstream is not to blame
    x.failure = *ctx.upload->failure();
    co_return attempt_outcome{attempt_kind::refused};
  }
  if (!r) {
    if (r.err().code == errc::cancelled || ctx.cancel.cancelled()) co_return attempt_outcome{attempt_kind::cancelled};
    cfg_.svc.upstreams.responded(idx, 0);
    co_return failed(out, attempt_kind::send_failed, r.err(), x);
  }
  x.response = std::move(*r);
  x.status = x.response->status();
  out.status = x.status;
  cfg_.svc.upstreams.responded(idx, static_cast<int>(x.status));
  count_connect(cfg_.svc, ctx, x.response->connect_time());
  observe_limits(u, x.response->head());
  // A streamed route's 2xx answer is relayed as it comes (relay_body.cpp), unless it is a small
  // JSON body: read whole, its usage is counted like any whole answer's.
  out.sse = x.is_sse() || (ctx.streamed && x.status / 100 == 2 && !small_json_answer(x.response->head()));
  if (!out.sse) {
    // A whole answer is read now, under its bound, so that a failure while reading it can still
    // be retried: nothing has gone to the client yet.
    const std::size_t cap =
        x.status / 100 == 2 ? static_cast<std::size_t>(cfg_.upstream.max_response_body) : max_error_body;
    auto b = co_await x.response->read_all(cap);
    if (!b) {
      if (b.err().code == errc::cancelled || ctx.cancel.cancelled()) co_return attempt_outcome{attempt_kind::cancelled};
      x.response.reset();
      co_return failed(out, attempt_kind::body_failed, b.err(), x);
    }
    x.body = std::move(*b);
  }
  if (u.spec.dialect == routing::upstream_dialect::anthropic)
    co_return adopt_anthropic_answer(x, ctx, call, static_cast<std::size_t>(cfg_.proxy.stream_buffer), out);
  co_return out;
}

}  // namespace sluice::proxy
