// handler::forward and what it needs: the upstream request built from the client's, the exchange
// loop (pick an upstream, send, classify, retry or fail over what is safe, hold for pacing or a
// saturated engine, all under one request deadline), then the answer: an SSE relay or a whole body.
#include <random>

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "observability/gauge_hold.hpp"
#include "observability/log.hpp"
#include "proxy/handler.hpp"
#include "proxy/handler_support.hpp"
#include "proxy/relay.hpp"
#include "routing/headers.hpp"

namespace sluice::proxy {

using namespace boost::asio::experimental::awaitable_operators;
using namespace detail;
namespace json = boost::json;

namespace {

constexpr std::size_t max_error_body = 64 * 1024;  // an upstream's error answer, kept to pass on

constexpr std::string_view attempts_header = "x-sluice-attempts";
constexpr std::string_view upstream_header = "x-sluice-upstream";

// The body with stream_options.include_usage set; empty when it cannot be rewritten.
std::string with_usage_requested(const std::string& body) {
  error_code ec;
  json::value v = json::parse(body, ec);
  if (ec || !v.is_object()) return {};
  auto& o = v.get_object();
  json::object so;
  if (auto* existing = o.if_contains("stream_options"); existing && existing->is_object()) so = existing->get_object();
  so["include_usage"] = true;
  o["stream_options"] = std::move(so);
  return json::serialize(v);
}

// prompt + completion tokens from a whole answer's `usage` (chat, completions, responses).
std::optional<std::uint64_t> usage_total(std::string_view body) {
  unsigned char stack[8192];
  json::monotonic_resource mr(stack, sizeof stack);
  error_code ec;
  json::value v = json::parse(body, ec, &mr);
  if (ec || !v.is_object()) return std::nullopt;
  const auto* usage = v.get_object().if_contains("usage");
  if (!usage || !usage->is_object()) return std::nullopt;
  if (const auto* t = usage->get_object().if_contains("total_tokens"); t && t->is_int64() && t->get_int64() >= 0)
    return static_cast<std::uint64_t>(t->get_int64());
  return std::nullopt;
}

// Retry-After in whole seconds, at least 1.
std::string retry_after_seconds(duration d) {
  auto s = std::chrono::ceil<std::chrono::seconds>(d).count();
  return std::to_string(std::max<std::int64_t>(s, 1));
}

std::minstd_rand& jitter_rng() {
  thread_local std::minstd_rand rng{std::random_device{}()};
  return rng;
}

}  // namespace

bool exchange::is_sse() const {
  if (!response || status / 100 != 2) return false;
  std::string_view ctype = response->head()[bhttp::field::content_type];
  return ctype.substr(0, 17) == "text/event-stream";
}

task<void> handler::watch_client(http::connection& conn, upstream::abort_handle& abort) {
  auto ev = co_await conn.wait_disconnect();
  if (ev == http::connection::peer_event::gone) {
    abort.abort();
    co_return;
  }
  if (ev == http::connection::peer_event::data) co_await conn.wait_cancelled();
}

task<void> handler::sleep_for(duration d, http::connection& conn) {
  cancel_on_exit guard{conn};
  net::steady_timer timer(co_await net::this_coro::executor);
  timer.expires_after(d);
  error_code ec;
  co_await timer.async_wait(ec_out(ec));
}

task<bool> handler::pause(duration d, http::connection& conn) {
  upstream::abort_handle nothing;  // nothing upstream in flight: the watcher only notices the client
  conn.rearm();
  auto r = co_await (sleep_for(d, conn) || watch_client(conn, nothing));
  conn.rearm();
  co_return r.index() == 0;
}

task<void> handler::run_exchange(exchange& x, upstream::request& req, http::connection& conn, story& st,
                                 std::string_view path) {
  auto& rt = cfg_.router;
  const auto& ro = rt.settings();
  auto& m = cfg_.svc.metrics.gateway();
  const auto deadline = st.start + ro.request_timeout;
  const auto hold_until = runtime::steady::now() + ro.max_hold;
  std::vector<bool> tried(rt.size(), false);
  const std::string_view model = st.route == obs::route::models ? std::string_view{} : std::string_view(st.model);
  const bool may_inject = st.stream && !st.include_usage && ro.usage != routing::usage_mode::never &&
                          (st.which == api::chat_completions || st.which == api::completions) &&
                          st.route != obs::route::models;

  while (true) {
    auto now = runtime::steady::now();
    if (now >= deadline) {
      if (!x.response && !x.failure)
        x.failure = error::make(errc::upstream_timeout, "the request exceeded request-timeout before an upstream answered");
      co_return;
    }
    auto pick = rt.pick(model, st.token_estimate, tried, now);
    if (!pick.picked) {
      if (pick.why == routing::no_pick::unknown_model) {
        error e = error::make(errc::not_found, "The model '" + st.model + "' is not served by this gateway.", "model");
        e.api_code = "model_not_found";
        x.response.reset();
        x.failure = std::move(e);
        co_return;
      }
      const bool give_up = pick.why == routing::no_pick::unhealthy || pick.retry_at > deadline ||
                           pick.retry_at > hold_until;
      if (give_up) {
        if (x.response || x.failure) co_return;  // the last attempt's answer stands
        const std::string what = model.empty() ? std::string("this gateway") : "'" + std::string(model) + "'";
        error e = pick.why == routing::no_pick::unhealthy
                      ? error::make(errc::overloaded, "No healthy upstream serves " + what + " right now; retry shortly.")
                  : pick.paced ? error::make(errc::rate_limited, "The upstream rate limit for " + what +
                                                                     " is spent; retry after the Retry-After delay.")
                               : error::make(errc::overloaded, "The upstreams for " + what + " are saturated; retry shortly.");
        x.failure_headers.set(bhttp::field::retry_after, retry_after_seconds(pick.retry_at - now));
        x.failure = std::move(e);
        co_return;
      }
      // Hold here while the budget refills, the engine recovers or a slot frees: better than a 429
      // from the upstream or a preemption storm on its GPU.
      const auto why = pick.paced ? hold_reason::paced : pick.engine ? hold_reason::engine : hold_reason::concurrency;
      const auto wait = std::chrono::duration_cast<duration>(pick.retry_at - now);
      bool stayed = co_await pause(wait, conn);
      const double held_s = seconds_since(now);
      if (cfg_.upstream_stats) cfg_.upstream_stats->held(why, held_s);
      m.overhead_seconds(obs::stage::queue).observe(held_s);
      st.overhead_seconds += held_s;
      if (!stayed) {
        x.client_gone = true;
        co_return;
      }
      continue;
    }

    // An attempt on the picked upstream.
    ++x.attempts;
    x.response.reset();  // before the send: the old response must not unregister the new connection
    x.body.reset();
    x.failure.reset();
    x.failure_headers.clear();
    x.status = 0;
    x.lease = std::move(pick.picked);
    const std::size_t idx = x.lease.index();
    auto& u = x.lease.upstream();
    req.target(u.target.base_path + std::string(path));
    if (!u.authorization.empty()) req.set(bhttp::field::authorization, u.authorization);
    else if (!x.client_authorization.empty()) req.set(bhttp::field::authorization, x.client_authorization);
    else req.erase(bhttp::field::authorization);
    if (may_inject) {  // ask for usage where a token budget is to be settled; the relay strips it again
      const bool want = ro.usage == routing::usage_mode::always || u.pace.has_token_budget();
      if (want != x.usage_injected) {
        if (want && x.alternate_body.empty()) x.alternate_body = with_usage_requested(req.body());
        if (!x.alternate_body.empty()) {
          std::swap(req.body(), x.alternate_body);
          x.usage_injected = want;
        }
      }
    }

    // The client's watch (forward) aborts the exchange if the client goes: the send then fails
    // with errc::cancelled.
    const auto left = std::chrono::duration_cast<duration>(deadline - now);
    auto r = co_await clients_.at(idx)->send(req, x.abort, left);
    now = runtime::steady::now();
    std::optional<retry_reason> why;
    if (!r) {
      if (r.err().code == errc::cancelled) {
        x.client_gone = true;
        co_return;
      }
      m.upstream_requests_total(idx, 0).Increment();
      x.lease.failed(now);
      if (r.err().code == errc::upstream_connect) x.lease.refund(now);  // it never reached the upstream
      if (r.err().retryable)
        why = r.err().code == errc::upstream_timeout ? retry_reason::timeout : retry_reason::connect;
      x.failure = r.err();
    } else {
      x.response = std::move(*r);
      x.status = x.response->status();
      m.upstream_requests_total(idx, static_cast<int>(x.status)).Increment();
      const double connect_s = std::chrono::duration<double>(x.response->connect_time()).count();
      m.overhead_seconds(obs::stage::connect).observe(connect_s);
      st.overhead_seconds += connect_s;
      const auto limits = routing::read_ratelimit_headers(x.response->head());
      if (limits.any()) u.pace.observe(limits, now);
      if (!x.is_sse()) {
        // A whole answer is read now, under its bound, so that a failure while reading it can
        // still be retried: nothing has gone to the client yet.
        const std::size_t cap = x.status / 100 == 2 ? static_cast<std::size_t>(cfg_.upstream.max_response_body)
                                                    : max_error_body;
        auto b = co_await x.response->read_all(cap);
        if (!b) {
          if (b.err().code == errc::cancelled) {
            x.client_gone = true;
            co_return;
          }
          x.lease.failed(now);
          x.response.reset();
          why = b.err().code == errc::upstream_timeout ? retry_reason::timeout : retry_reason::protocol;
          x.failure = b.err();
        } else {
          x.body = std::move(*b);
        }
      }
      if (x.response) {
        if (x.status == 429) {
          x.lease.succeeded();  // alive, only rate limited: the pacer holds back until retry-after
          why = retry_reason::status_429;
        } else if (x.status >= 500) {
          x.lease.failed(now);
          why = retry_reason::status_5xx;
        } else if (!x.is_sse()) {
          x.lease.succeeded();  // an SSE stream reports its outcome when it ends
        }
      }
    }
    if (!why) co_return;  // an answer to pass on, or a failure no retry can fix
    if (x.attempts >= ro.max_attempts || runtime::steady::now() >= deadline ||
        cfg_.svc.drain.cutting.load(std::memory_order_relaxed))
      co_return;
    if (cfg_.upstream_stats) cfg_.upstream_stats->retried(idx, *why);
    tried[idx] = true;
    x.lease = routing::lease{};
    // Fail over at once when another upstream is ready; otherwise back off (full jitter) before
    // the same one again. A retry-after it sent is kept by its pacer, which holds the next pick.
    const bool failover = rt.has_ready_untried(model, st.token_estimate, tried, now);
    if (!failover) {
      auto d = routing::full_jitter(ro.backoff_base, ro.backoff_cap, x.attempts - 1, jitter_rng());
      d = std::min<duration>(d, std::chrono::duration_cast<duration>(deadline - now));
      bool stayed = co_await pause(d, conn);
      if (!stayed) {
        x.client_gone = true;
        co_return;
      }
    }
  }
}

task<bool> handler::forward(http::request& req, http::connection& conn, std::string path, story& st) {
  const unsigned version = req.version();
  const bool keep = keep_alive(req);
  auto& m = cfg_.svc.metrics.gateway();
  obs::gauge_hold active(m.streams_active());

  upstream::request up_req{req.method(), path, 11};
  for (const auto& f : req) {
    if (forwardable(f.name_string())) up_req.set(f.name_string(), f.value());
  }
  exchange x;
  if (!cfg_.svc.keys) {
    // Pass-through mode for upstreams without a key of their own: no sluice client keys, so the
    // client's key is the upstream's. (With client keys, the client's key is sluice's: never sent.)
    if (auto it = req.find(bhttp::field::authorization); it != req.end()) x.client_authorization = it->value();
  }
  up_req.set("x-request-id", st.request_id);
  if (req.method() == bhttp::verb::post) {
    up_req.set(bhttp::field::content_type, "application/json");
    up_req.body() = std::move(req.body());
  }
  up_req.set(bhttp::field::accept, st.stream ? "text/event-stream" : "application/json");

  // From here until the answer is written, a client that goes away aborts the exchange at once
  // (whatever phase it is in: connect, send, head, body, relay).
  auto watch = conn.watch_peer(x);
  co_await run_exchange(x, up_req, conn, st, path);
  if (x.client_gone) {
    m.requests_total(st.route, obs::outcome::cancelled).Increment();
    co_return false;
  }
  if (!st.contract || st.stream || !st.contract->keeps_request_body()) {  // kept for a structured-output retry
    up_req.body().clear();
    up_req.body().shrink_to_fit();
    x.alternate_body.clear();
    x.alternate_body.shrink_to_fit();
  }
  if (!x.response) co_return co_await send_failure(x, conn, st, version, keep);
  if (x.is_sse()) {
    // Nothing of either request is needed while the stream runs: give their headers back now
    // (they would otherwise stay allocated for the stream's whole life).
    req = http::request{};
    up_req = upstream::request{};
    x.alternate_body = std::string();
    co_return co_await relay_stream(x, conn, path, st, version, keep);
  }
  co_return co_await answer_whole(x, up_req, conn, path, st, version, keep);
}

task<bool> handler::send_failure(exchange& x, http::connection& conn, story& st, unsigned version, bool keep) {
  bhttp::fields extra = std::move(x.failure_headers);
  if (x.attempts) extra.set(attempts_header, std::to_string(x.attempts));
  co_return co_await send_error(*x.failure, conn, version, keep, st, std::nullopt, &extra);
}

task<bool> handler::write_stream_head(exchange& x, http::connection& conn, story& st, unsigned version, bool keep) {
  bhttp::response<bhttp::empty_body> head{static_cast<bhttp::status>(x.status), version};
  head.set(bhttp::field::content_type, "text/event-stream");
  head.set(bhttp::field::cache_control, "no-cache");
  head.set("x-accel-buffering", "no");
  head.set("x-request-id", st.request_id);
  head.set("x-sluice-overhead-ms", st.overhead_header());
  head.set(attempts_header, std::to_string(x.attempts));
  head.set(upstream_header, x.lease.upstream().spec.name);
  for (const auto& f : x.response->head())
    if (passback(f.name_string())) head.set(f.name_string(), f.value());
  head.keep_alive(keep);
  if (x.response->has_buffered_body()) {
    // The first events came with the upstream's head: the head goes out with them, in one write
    // (the relay writes a held head alone before it waits for more).
    conn.hold_head(head);
    co_return true;
  }
  auto w = co_await conn.write_head(head);
  co_return w.has_value();
}

// Frames on the way to the relay live as long as the stream: the head is written by its own
// coroutine, the accounting after it is a plain function, so this frame holds little but the relay.
task<bool> handler::relay_stream(exchange& x, http::connection& conn, std::string_view path, story& st,
                                 unsigned version, bool keep) {
  sse_relay relay(conn, *x.response, cfg_.proxy, cfg_.svc, st.start);
  if (watchdog_) relay.watch(*watchdog_);
  relay.set_deadline(st.start + cfg_.router.settings().request_timeout);
  if (x.usage_injected) relay.strip_usage_chunk();
  std::unique_ptr<stream_check> output_check;  // structured outputs, fed by the relay's own parse
  if (st.contract && st.contract->checks_streams()) {
    output_check = std::make_unique<stream_check>(*st.contract);
    relay.set_output_check(output_check.get());
  }
  if (path == "/v1/responses") relay.end_on_response_completed();
  const bool head_written = co_await write_stream_head(x, conn, st, version, keep);
  if (!head_written) {
    x.response->abort();
    relay_result gone;
    gone.client_gone = true;
    co_return account_stream(x, st, gone, keep);
  }
  co_await relay.run();
  co_return account_stream(x, st, relay.result(), keep);
}

bool handler::account_stream(exchange& x, story& st, const relay_result& result, bool keep) {
  auto& m = cfg_.svc.metrics.gateway();
  auto& u = x.lease.upstream();
  // The upstream's health and budget: a stream that broke on the upstream's side counts against it.
  const auto now = runtime::steady::now();
  if (result.completed) {
    x.lease.succeeded();
  } else if (result.failure && !result.client_gone) {
    auto c = result.failure->code;
    if (c == errc::upstream_timeout || c == errc::upstream_protocol || c == errc::upstream_connect) x.lease.failed(now);
  }
  if (result.prompt_tokens + result.completion_tokens > 0)
    x.lease.settle(result.prompt_tokens + result.completion_tokens, now);
  if (result.usage_stripped && cfg_.upstream_stats) cfg_.upstream_stats->usage_stripped();

  obs::outcome o = result.completed ? obs::outcome::ok
                   : result.client_gone ? obs::outcome::cancelled
                   : result.failure && result.failure->code == errc::upstream_timeout ? obs::outcome::timeout
                   : result.failure && result.failure->code == errc::internal         ? obs::outcome::internal
                                                                                        : obs::outcome::upstream_error;
  m.requests_total(st.route, o).Increment();
  double total_s = seconds_since(st.start);
  m.request_duration_seconds(st.route).observe(total_s);
  m.overhead_seconds(obs::stage::relay).observe(result.relay_overhead_seconds);
  m.tokens_total(obs::direction::completion)
      .Increment(static_cast<double>(result.completion_tokens ? result.completion_tokens : result.content_events));
  if (result.prompt_tokens) m.tokens_total(obs::direction::prompt).Increment(static_cast<double>(result.prompt_tokens));

  obs::request_record rec;
  rec.request_id = st.request_id;
  rec.route = obs::to_string(st.route);
  rec.upstream = u.spec.name;
  rec.outcome = obs::to_string(o);
  rec.reason = result.failure ? to_string(result.failure->code) : std::string_view{};
  rec.model = st.model;
  rec.status = static_cast<int>(x.status);
  rec.attempts = x.attempts;
  rec.ttft_ms = result.first_event == runtime::steady::time_point{}
                    ? 0.0
                    : std::chrono::duration<double, std::milli>(result.first_event - st.start).count();
  rec.duration_ms = total_s * 1000.0;
  rec.overhead_ms = (st.overhead_seconds + result.relay_overhead_seconds) * 1000.0;
  rec.tokens_in = result.prompt_tokens;
  rec.tokens_out = result.completion_tokens ? result.completion_tokens : result.content_events;
  rec.bytes_in = st.bytes_in;
  rec.bytes_out = result.bytes_out;
  obs::log_stream_completed(rec);
  return keep && result.completed && !result.client_gone && !result.failure;
}

task<bool> handler::answer_whole(exchange& x, upstream::request& up_req, http::connection& conn,
                                 std::string_view path, story& st, unsigned version, bool keep) {
  auto& m = cfg_.svc.metrics.gateway();
  unsigned status = x.status;
  std::string body = std::move(*x.body);
  std::string upstream_name = x.lease ? x.lease.upstream().spec.name : std::string();
  if (status / 100 == 2 && x.lease && x.lease.upstream().pace.has_token_budget()) {
    if (auto used = usage_total(body)) x.lease.settle(*used, runtime::steady::now());
  }
  std::string ctype(x.response->head()[bhttp::field::content_type]);
  whole_check output_check;  // structured outputs: check a whole 2xx answer (retry: ask again)
  if (st.contract && status / 100 == 2) {
    output_check = co_await check_whole_answer(*st.contract, up_req, conn, st, path, status, body);
    if (output_check.client_gone) co_return false;
    if (output_check.failure) {
      bhttp::fields extra;
      for (const auto& [k, v] : output_check.headers) extra.set(k, v);
      extra.set(attempts_header, std::to_string(x.attempts));
      co_return co_await send_error(*output_check.failure, conn, version, keep, st, std::nullopt, &extra);
    }
  }
  http::response res{static_cast<bhttp::status>(status), version};
  res.set(bhttp::field::content_type, ctype.empty() ? std::string_view("application/json") : std::string_view(ctype));
  res.set("x-request-id", st.request_id);
  res.set("x-sluice-overhead-ms", st.overhead_header());
  res.set(attempts_header, std::to_string(x.attempts));
  if (!upstream_name.empty()) res.set(upstream_header, upstream_name);
  for (const auto& f : x.response->head())
    if (passback(f.name_string())) res.set(f.name_string(), f.value());
  for (const auto& [k, v] : output_check.headers) res.set(k, v);
  if (status / 100 != 2) {
    res.body() = upstream_error_body(status, body);
    res.set(bhttp::field::content_type, "application/json");
  } else {
    res.body() = std::move(body);
  }
  res.keep_alive(keep);
  res.prepare_payload();
  std::uint64_t bytes_out = res.body().size();
  auto w = co_await conn.write(res);
  obs::outcome o = outcome_of_status(status);
  m.requests_total(st.route, o).Increment();
  double total_s = seconds_since(st.start);
  m.request_duration_seconds(st.route).observe(total_s);

  obs::request_record rec;
  rec.request_id = st.request_id;
  rec.route = obs::to_string(st.route);
  rec.upstream = upstream_name;
  rec.outcome = obs::to_string(o);
  rec.model = st.model;
  rec.status = static_cast<int>(status);
  rec.attempts = x.attempts;
  rec.duration_ms = total_s * 1000.0;
  rec.overhead_ms = st.overhead_seconds * 1000.0;
  rec.bytes_in = st.bytes_in;
  rec.bytes_out = bytes_out;
  obs::log_request_completed(rec);
  co_return w.has_value() && keep;
}

}  // namespace sluice::proxy
