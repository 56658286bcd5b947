#include "proxy/handler.hpp"

#include <cstdio>

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>

#include "http/error_response.hpp"
#include "observability/gauge_hold.hpp"
#include "observability/log.hpp"
#include "proxy/relay.hpp"
#include "proxy/request_id.hpp"

namespace sluice::proxy {

using namespace boost::asio::experimental::awaitable_operators;
namespace json = boost::json;

namespace {

bool starts_with_ci(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  return true;
}

// Client headers worth passing on: OpenAI's own and custom x- headers, never hop-by-hop ones, never
// the client's credentials when sluice holds the upstream key, never sluice's own controls.
bool forwardable(std::string_view name) {
  if (starts_with_ci(name, "x-sluice-") || starts_with_ci(name, "x-request-id") || starts_with_ci(name, "x-forwarded-"))
    return false;
  return starts_with_ci(name, "openai-") || starts_with_ci(name, "x-");
}

// Upstream response headers worth passing back to the client.
bool passback(std::string_view name) {
  return starts_with_ci(name, "x-ratelimit-") || starts_with_ci(name, "retry-after") ||
         starts_with_ci(name, "openai-");
}

// A non-2xx upstream body becomes the client's error body: kept when already OpenAI-shaped.
std::string upstream_error_body(unsigned status, const std::string& body) {
  unsigned char stack[4096];
  json::monotonic_resource mr(stack, sizeof stack);
  error_code ec;
  json::value v = json::parse(body, ec, &mr);
  if (!ec && v.is_object() && v.get_object().contains("error") && v.get_object().at("error").is_object()) return body;
  error e = error::make(errc::upstream_status, "upstream returned HTTP " + std::to_string(status));
  e.upstream_status = static_cast<int>(status);
  return http::error_body(e);
}

double seconds_since(runtime::steady::time_point t) {
  return std::chrono::duration<double>(runtime::steady::now() - t).count();
}

obs::outcome outcome_of_status(unsigned status) {
  if (status / 100 == 2) return obs::outcome::ok;
  if (status == 408 || status == 504) return obs::outcome::timeout;
  if (status / 100 == 4) return obs::outcome::client_error;
  return obs::outcome::upstream_error;
}

obs::reject_reason reason_of(admission::refusal r) {
  switch (r) {
    case admission::refusal::queue_full: return obs::reject_reason::queue_full;
    case admission::refusal::queue_timeout: return obs::reject_reason::queue_timeout;
    case admission::refusal::memory: return obs::reject_reason::memory;
    case admission::refusal::draining: return obs::reject_reason::draining;
    case admission::refusal::cancelled: return obs::reject_reason::queue_timeout;
  }
  return obs::reject_reason::queue_full;
}

struct cancel_on_exit {
  http::connection& c;
  ~cancel_on_exit() { c.cancel(); }
};

}  // namespace

std::string story::overhead_header() const {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", overhead_seconds * 1000.0);
  return buf;
}

handler::handler(net::any_io_executor ex, const shared_config& cfg, upstream::ssl::context* tls)
    : cfg_(cfg), client_(std::move(ex), cfg.upstream, cfg.target, tls) {}

bool handler::keep_alive(const http::request& req) const noexcept {
  // While draining, ask every client to reconnect (to another replica) after this response.
  return req.keep_alive() && !cfg_.svc.drain.draining.load(std::memory_order_relaxed);
}

task<void> handler::reject(const error& e, http::connection& conn) {
  auto res = http::make_error_response(e, 11, false);
  res.set("x-request-id", generate_request_id());
  res.set("x-sluice-overhead-ms", "0.000");
  auto reason = e.code == errc::request_timeout     ? obs::reject_reason::header_timeout
                : e.code == errc::payload_too_large || e.code == errc::header_too_large ? obs::reject_reason::too_large
                                                                                        : obs::reject_reason::bad_request;
  auto& m = cfg_.svc.metrics.gateway();
  m.rejections_total(reason).Increment();
  m.requests_total(obs::route::other, obs::outcome::client_error).Increment();
  co_await conn.write(res);
}

task<bool> handler::send_json(bhttp::status status, std::string body, std::string_view content_type,
                              http::connection& conn, unsigned version, bool keep_alive, story& st) {
  http::response res{status, version};
  res.set(bhttp::field::content_type, content_type);
  res.set("x-request-id", st.request_id);
  res.set("x-sluice-overhead-ms", st.overhead_header());
  res.body() = std::move(body);
  res.keep_alive(keep_alive);
  res.prepare_payload();
  auto w = co_await conn.write(res);
  auto& m = cfg_.svc.metrics.gateway();
  m.requests_total(st.route, outcome_of_status(static_cast<unsigned>(status))).Increment();
  m.request_duration_seconds(st.route).observe(seconds_since(st.start));
  co_return w.has_value() && keep_alive;
}

task<bool> handler::send_error(const error& e, http::connection& conn, unsigned version, bool keep_alive, story& st,
                               std::optional<obs::reject_reason> reason, const bhttp::fields* extra) {
  auto res = http::make_error_response(e, version, keep_alive);
  res.set("x-request-id", st.request_id);
  res.set("x-sluice-overhead-ms", st.overhead_header());
  if (extra)
    for (const auto& f : *extra) res.set(f.name_string(), f.value());
  auto w = co_await conn.write(res);
  auto& m = cfg_.svc.metrics.gateway();
  unsigned status = res.result_int();
  obs::outcome o = reason ? obs::outcome::rejected : outcome_of_status(status);
  if (e.code == errc::internal) o = obs::outcome::internal;
  m.requests_total(st.route, o).Increment();
  m.request_duration_seconds(st.route).observe(seconds_since(st.start));
  if (reason) {
    m.rejections_total(*reason).Increment();
    obs::request_record rec;
    rec.request_id = st.request_id;
    rec.route = obs::to_string(st.route);
    rec.outcome = obs::to_string(o);
    rec.reason = obs::to_string(*reason);
    rec.model = st.model;
    rec.status = static_cast<int>(status);
    rec.duration_ms = seconds_since(st.start) * 1000.0;
    rec.bytes_in = st.bytes_in;
    obs::log_request_refused(rec);
  }
  co_return w.has_value() && keep_alive;
}

task<bool> handler::handle(http::request req, http::connection& conn) {
  story st;
  if (auto it = req.find("x-request-id"); it != req.end() && is_sane_request_id(it->value()))
    st.request_id = std::string(it->value());
  else
    st.request_id = generate_request_id();
  st.bytes_in = req.body().size();

  std::string_view target = req.target();
  if (auto q = target.find('?'); q != std::string_view::npos) target = target.substr(0, q);
  const bool keep = keep_alive(req);
  const unsigned version = req.version();
  const auto method = req.method();

  auto wrong_method = [&](bhttp::verb v, std::string_view allow) -> std::optional<error> {
    if (method == v) return std::nullopt;
    return error::make(errc::method_not_allowed,
                       "Method " + std::string(req.method_string()) + " is not allowed on " + std::string(target) +
                           "; use " + std::string(allow) + ".");
  };

  if (target == "/healthz") {
    st.route = obs::route::healthz;
    if (auto e = wrong_method(bhttp::verb::get, "GET")) co_return co_await send_error(*e, conn, version, keep, st);
    co_return co_await send_json(bhttp::status::ok, R"({"status":"ok"})", "application/json", conn, version, keep, st);
  }
  if (target == "/readyz") {
    st.route = obs::route::readyz;
    if (auto e = wrong_method(bhttp::verb::get, "GET")) co_return co_await send_error(*e, conn, version, keep, st);
    const auto& svc = cfg_.svc;
    std::string why;
    if (svc.drain.draining.load()) why = "draining";
    else if (!svc.budget.ready()) why = "memory";
    if (why.empty())
      co_return co_await send_json(bhttp::status::ok, R"({"status":"ready"})", "application/json", conn, version, keep,
                                   st);
    co_return co_await send_json(bhttp::status::service_unavailable,
                                 R"({"status":"not ready","reason":")" + why + R"("})", "application/json", conn,
                                 version, keep, st);
  }
  if (target == "/metrics") {
    st.route = obs::route::metrics;
    if (auto e = wrong_method(bhttp::verb::get, "GET")) co_return co_await send_error(*e, conn, version, keep, st);
    co_return co_await send_json(bhttp::status::ok, cfg_.svc.metrics.serialize(),
                                 obs::metrics_registry::content_type, conn, version, keep, st);
  }
  if (target == "/v1/models") {
    st.route = obs::route::models;
    if (auto e = wrong_method(bhttp::verb::get, "GET")) co_return co_await send_error(*e, conn, version, keep, st);
    co_return co_await forward(req, conn, "/v1/models", st);
  }
  if (target == "/v1/chat/completions" || target == "/v1/completions" || target == "/v1/responses") {
    const api which = target == "/v1/completions" ? api::completions
                      : target == "/v1/responses" ? api::responses
                                                  : api::chat_completions;
    st.route = which == api::completions ? obs::route::completions
               : which == api::responses ? obs::route::responses
                                         : obs::route::chat_completions;
    if (auto e = wrong_method(bhttp::verb::post, "POST")) co_return co_await send_error(*e, conn, version, keep, st);
    auto parse_start = runtime::steady::now();
    auto summary = validate_request(which, req.body());
    double parse_s = seconds_since(parse_start);
    cfg_.svc.metrics.gateway().overhead_seconds(obs::stage::parse).observe(parse_s);
    st.overhead_seconds += parse_s;
    if (!summary) co_return co_await send_error(summary.err(), conn, version, keep, st);
    st.model = summary->model;
    st.stream = summary->stream;
    if (cfg_.schemas) {  // structured outputs: policy + compiled schema, a 400 before anything goes upstream
      auto contract = make_output_contract(which, std::move(summary->output_schema),
                                           {req[schema_policy_header], req[schema_events_header]}, *cfg_.schema,
                                           *cfg_.schemas);
      if (!contract) co_return co_await send_error(contract.err(), conn, version, keep, st);
      st.contract = std::move(*contract);
    }
    auto ticket = co_await admit(req, conn, st, keep);
    if (!ticket) co_return false;  // refused (answered) or the client left while queued
    co_return co_await forward(req, conn, std::string(target), st);
  }
  co_return co_await send_error(
      error::make(errc::not_found, "Unknown request URL: " + std::string(req.method_string()) + " " +
                                       std::string(target) + "."),
      conn, version, keep, st);
}

task<admission::acquire_result> handler::acquire_slot(http::connection& conn) {
  cancel_on_exit guard{conn};
  co_return co_await cfg_.svc.admission.acquire(cfg_.svc.admission_opts.per_stream_reservation);
}

task<std::optional<admission_ticket>> handler::admit(http::request& req, http::connection& conn, story& st,
                                                     bool keep) {
  auto& svc = cfg_.svc;
  auto& m = svc.metrics.gateway();
  admission_ticket ticket;

  if (svc.keys) {
    auto rl_start = runtime::steady::now();
    auto it = req.find(bhttp::field::authorization);
    auto who = svc.keys->authenticate_header(it == req.end() ? std::string_view{} : std::string_view(it->value()));
    if (!who) {
      // The message never repeats what the client sent.
      error e = error::make(errc::unauthorized, "Incorrect or missing API key. Pass a sluice client key as Bearer.");
      co_await send_error(e, conn, req.version(), false, st, obs::reject_reason::unauthorized);
      co_return std::nullopt;
    }
    auto got = svc.keys->try_acquire(*who);
    double rl_s = seconds_since(rl_start);
    m.overhead_seconds(obs::stage::ratelimit).observe(rl_s);
    st.overhead_seconds += rl_s;
    if (auto* refusal = std::get_if<admission::rate_refusal>(&got)) {
      error e = error::make(errc::rate_limited,
                            refusal->which == admission::rate_limit_kind::rpm
                                ? "Rate limit reached for requests per minute on this key."
                                : "Too many concurrent requests on this key.");
      bhttp::fields extra;
      extra.set(bhttp::field::retry_after, std::to_string(refusal->retry_after.count()));
      if (refusal->headers) {
        extra.set("x-ratelimit-limit-requests", std::to_string(refusal->headers->limit));
        extra.set("x-ratelimit-remaining-requests", std::to_string(refusal->headers->remaining));
        extra.set("x-ratelimit-reset-requests", refusal->headers->reset);
      }
      co_await send_error(e, conn, req.version(), keep, st, obs::reject_reason::rate_limit, &extra);
      co_return std::nullopt;
    }
    ticket.key = std::move(std::get<admission::key_permit>(got));
  }

  if (svc.budget.over_shed_threshold()) {
    error e = error::make(errc::overloaded, "The gateway is near its memory budget; retry shortly.");
    bhttp::fields extra;
    extra.set(bhttp::field::retry_after, std::to_string(svc.admission.retry_after_for(svc.admission.queued() + 1).count()));
    co_await send_error(e, conn, req.version(), keep, st, obs::reject_reason::memory, &extra);
    co_return std::nullopt;
  }

  auto queue_start = runtime::steady::now();
  m.queue_depth().Increment();
  upstream::abort_handle none;  // nothing upstream yet: the watcher only has to notice the client
  conn.rearm();
  auto r = co_await (acquire_slot(conn) || watch_client(conn, none));
  conn.rearm();
  m.queue_depth().Decrement();
  double queued_s = seconds_since(queue_start);
  m.queue_wait_seconds().observe(queued_s);
  m.overhead_seconds(obs::stage::queue).observe(queued_s);
  st.overhead_seconds += queued_s;
  if (r.index() == 2) {  // the client left while queued: it never reaches the upstream
    m.requests_total(st.route, obs::outcome::cancelled).Increment();
    co_return std::nullopt;
  }
  if (r.index() == 1) {
    const auto& refused = std::get<1>(r);
    error e = error::make(errc::overloaded, refused.why == admission::refusal::queue_full
                                                ? "The gateway is at capacity and its queue is full; retry later."
                                            : refused.why == admission::refusal::queue_timeout
                                                ? "The gateway is at capacity; the request waited too long in the queue."
                                                : "The gateway cannot take this request now; retry later.");
    bhttp::fields extra;
    extra.set(bhttp::field::retry_after, std::to_string(refused.retry_after.count()));
    co_await send_error(e, conn, req.version(), keep, st, reason_of(refused.why), &extra);
    co_return std::nullopt;
  }
  ticket.slot = std::move(std::get<0>(r));
  co_return std::optional<admission_ticket>(std::move(ticket));
}

task<void> handler::watch_client(http::connection& conn, upstream::abort_handle& abort) {
  auto ev = co_await conn.wait_disconnect();
  if (ev == http::connection::peer_event::gone) {
    abort.abort();
    co_return;
  }
  if (ev == http::connection::peer_event::data) co_await conn.wait_cancelled();
}

task<result<std::unique_ptr<upstream::response>>> handler::send_upstream(upstream::request& req,
                                                                         upstream::abort_handle& abort,
                                                                         http::connection& conn) {
  // Whatever happens here, the watcher racing beside must end: cancel the client socket's wait.
  cancel_on_exit guard{conn};
  co_return co_await client_.send(req, abort);
}

task<result<std::string>> handler::read_body(upstream::response& up, http::connection& conn) {
  cancel_on_exit guard{conn};
  co_return co_await up.read_all(static_cast<std::size_t>(cfg_.upstream.max_response_body));
}

task<bool> handler::forward(http::request& req, http::connection& conn, std::string path, story& st) {
  const unsigned version = req.version();
  const bool keep = keep_alive(req);
  auto& m = cfg_.svc.metrics.gateway();
  obs::gauge_hold active(m.streams_active());

  upstream::request up_req{req.method(), cfg_.target.base_path + path, 11};
  for (const auto& f : req) {
    if (forwardable(f.name_string())) up_req.set(f.name_string(), f.value());
  }
  if (!cfg_.authorization.empty()) {
    up_req.set(bhttp::field::authorization, cfg_.authorization);
  } else if (!cfg_.svc.keys) {
    // Pass-through mode: no upstream key and no sluice client keys, so the client's key is the
    // upstream's. (With client keys configured, the client's key is sluice's and never forwarded.)
    if (auto it = req.find(bhttp::field::authorization); it != req.end())
      up_req.set(bhttp::field::authorization, it->value());
  }
  up_req.set("x-request-id", st.request_id);
  if (req.method() == bhttp::verb::post) {
    up_req.set(bhttp::field::content_type, "application/json");
    up_req.body() = std::move(req.body());
  }
  up_req.set(bhttp::field::accept, st.stream ? "text/event-stream" : "application/json");

  // Abort handle first: the response refers to it and must die before it.
  upstream::abort_handle abort;
  std::unique_ptr<upstream::response> up;
  {
    conn.rearm();
    auto sent = co_await (send_upstream(up_req, abort, conn) || watch_client(conn, abort));
    conn.rearm();
    if (sent.index() == 1) {  // the client left while we waited for the upstream
      m.requests_total(st.route, obs::outcome::cancelled).Increment();
      co_return false;
    }
    auto& r = std::get<0>(sent);
    if (!r) {
      if (r.err().code == errc::cancelled) {
        m.requests_total(st.route, obs::outcome::cancelled).Increment();
        co_return false;
      }
      m.upstream_requests_total(0, 0).Increment();
      co_return co_await send_error(r.err(), conn, version, keep, st);
    }
    up = std::move(*r);
  }
  if (!st.contract || st.stream || !st.contract->keeps_request_body()) {  // kept for a structured-output retry
    up_req.body().clear();
    up_req.body().shrink_to_fit();
  }

  unsigned status = up->status();  // a structured-output retry may replace it
  m.upstream_requests_total(0, static_cast<int>(status)).Increment();
  double connect_s = std::chrono::duration<double>(up->connect_time()).count();
  m.overhead_seconds(obs::stage::connect).observe(connect_s);
  st.overhead_seconds += connect_s;
  std::string_view ctype = up->head()[bhttp::field::content_type];
  const bool is_sse = status / 100 == 2 && ctype.substr(0, 17) == "text/event-stream";

  if (is_sse) {
    bhttp::response<bhttp::empty_body> head{static_cast<bhttp::status>(status), version};
    head.set(bhttp::field::content_type, "text/event-stream");
    head.set(bhttp::field::cache_control, "no-cache");
    head.set("x-accel-buffering", "no");
    head.set("x-request-id", st.request_id);
    head.set("x-sluice-overhead-ms", st.overhead_header());
    for (const auto& f : up->head())
      if (passback(f.name_string())) head.set(f.name_string(), f.value());
    head.keep_alive(keep);
    sse_relay relay(conn, *up, cfg_.proxy, cfg_.svc, st.start);
    if (watchdog_) watchdog_->add(relay);
    std::optional<stream_check> output_check;  // structured outputs, fed by the relay's own parse
    if (st.contract && st.contract->checks_streams()) output_check.emplace(*st.contract);
    if (output_check) relay.set_output_check(&*output_check);
    if (path == "/v1/responses") relay.end_on_response_completed();
    auto result = co_await relay.run(head);

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
    rec.upstream = "default";
    rec.outcome = obs::to_string(o);
    rec.reason = result.failure ? to_string(result.failure->code) : std::string_view{};
    rec.model = st.model;
    rec.status = static_cast<int>(status);
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
    co_return keep && result.completed && !result.client_gone && !result.failure;
  }

  // Whole body (JSON answers and errors): read under its bound, then answer in one piece.
  conn.rearm();
  auto read = co_await (read_body(*up, conn) || watch_client(conn, abort));
  conn.rearm();
  if (read.index() == 1) {
    m.requests_total(st.route, obs::outcome::cancelled).Increment();
    co_return false;
  }
  auto& body = std::get<0>(read);
  if (!body) {
    if (body.err().code == errc::cancelled) co_return false;
    co_return co_await send_error(body.err(), conn, version, keep, st);
  }
  whole_check output_check;  // structured outputs: check a whole 2xx answer (retry: ask again)
  if (st.contract && status / 100 == 2) {
    output_check = co_await check_whole_answer(*st.contract, up_req, conn, status, *body);
    if (output_check.client_gone) co_return false;
    if (output_check.failure) {
      bhttp::fields extra;
      for (const auto& [k, v] : output_check.headers) extra.set(k, v);
      co_return co_await send_error(*output_check.failure, conn, version, keep, st, std::nullopt, &extra);
    }
  }
  http::response res{static_cast<bhttp::status>(status), version};
  res.set(bhttp::field::content_type, ctype.empty() ? std::string_view("application/json") : ctype);
  res.set("x-request-id", st.request_id);
  res.set("x-sluice-overhead-ms", st.overhead_header());
  for (const auto& f : up->head())
    if (passback(f.name_string())) res.set(f.name_string(), f.value());
  for (const auto& [k, v] : output_check.headers) res.set(k, v);
  if (status / 100 != 2) {
    res.body() = upstream_error_body(status, *body);
    res.set(bhttp::field::content_type, "application/json");
  } else {
    res.body() = std::move(*body);
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
  rec.upstream = "default";
  rec.outcome = obs::to_string(o);
  rec.model = st.model;
  rec.status = static_cast<int>(status);
  rec.duration_ms = total_s * 1000.0;
  rec.overhead_ms = st.overhead_seconds * 1000.0;
  rec.bytes_in = st.bytes_in;
  rec.bytes_out = bytes_out;
  obs::log_request_completed(rec);
  co_return w.has_value() && keep;
}

}  // namespace sluice::proxy
