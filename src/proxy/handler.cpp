#include "proxy/handler.hpp"
#include "proxy/handler_support.hpp"

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

using namespace detail;

namespace {
// The answer's share of a request's paced token cost when it names no max_tokens; settled against
// the actual usage afterwards.
constexpr std::uint64_t default_answer_tokens = 256;
}  // namespace

std::string story::overhead_header() const {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", overhead_seconds * 1000.0);
  return buf;
}

handler::handler(net::any_io_executor ex, const shared_config& cfg, upstream::ssl::context* tls) : cfg_(cfg) {
  for (std::size_t i = 0; i < cfg.router.size(); ++i)
    clients_.push_back(std::make_unique<upstream::client>(ex, cfg.upstream, cfg.router.at(i).target, tls));
}

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

namespace {
constexpr std::string_view path_of(api which) {
  switch (which) {
    case api::completions: return "/v1/completions";
    case api::responses: return "/v1/responses";
    case api::chat_completions: break;
  }
  return "/v1/chat/completions";
}

std::string_view path_without_query(const http::request& req) {
  std::string_view target = req.target();
  if (auto q = target.find('?'); q != std::string_view::npos) target = target.substr(0, q);
  return target;
}
}  // namespace

// The request story starts here. Kept to a dispatch with a small coroutine frame: this frame, like
// every frame on the way to the relay, lives as long as the stream (GCC gives every temporary of
// every co_await its own slot), so the branches with many awaits live in their own coroutines.
task<bool> handler::handle(http::request req, http::connection& conn) {
  story st;
  if (auto it = req.find("x-request-id"); it != req.end() && is_sane_request_id(it->value()))
    st.request_id = std::string(it->value());
  else
    st.request_id = generate_request_id();
  st.bytes_in = req.body().size();

  std::string_view target = path_without_query(req);
  api which = api::chat_completions;
  if (target == "/v1/completions") which = api::completions;
  else if (target == "/v1/responses") which = api::responses;
  else if (target != "/v1/chat/completions") co_return co_await handle_other(req, conn, st);
  co_return co_await handle_completion(req, conn, st, which);
}

std::optional<error> handler::prepare_completion(http::request& req, story& st, api which) {
  st.route = which == api::completions ? obs::route::completions
             : which == api::responses ? obs::route::responses
                                       : obs::route::chat_completions;
  if (req.method() != bhttp::verb::post)
    return error::make(errc::method_not_allowed, "Method " + std::string(req.method_string()) + " is not allowed on " +
                                                     std::string(path_of(which)) + "; use POST.");
  auto parse_start = runtime::steady::now();
  auto summary = validate_request(which, req.body());
  double parse_s = seconds_since(parse_start);
  cfg_.svc.metrics.gateway().overhead_seconds(obs::stage::parse).observe(parse_s);
  st.overhead_seconds += parse_s;
  if (!summary) return summary.err();
  st.model = summary->model;
  st.stream = summary->stream;
  st.which = which;
  st.include_usage = summary->include_usage;
  // Paced cost before sending: about 4 bytes per prompt token, plus what the answer may use.
  st.token_estimate = summary->prompt_chars / 4 + (summary->max_tokens ? summary->max_tokens : default_answer_tokens);
  if (cfg_.schemas) {  // structured outputs: policy + compiled schema, a 400 before anything goes upstream
    auto contract = make_output_contract(which, std::move(summary->output_schema),
                                         {req[schema_policy_header], req[schema_events_header]}, *cfg_.schema,
                                         *cfg_.schemas);
    if (!contract) return contract.err();
    st.contract = std::move(*contract);
    if (auto tools = check_tool_schemas(summary->tool_schemas, *cfg_.schemas); !tools) return tools.err();
  }
  return std::nullopt;
}

task<bool> handler::handle_completion(http::request& req, http::connection& conn, story& st, api which) {
  std::optional<error> refused = prepare_completion(req, st, which);
  const bool keep = keep_alive(req);
  if (refused) co_return co_await send_error(*refused, conn, req.version(), keep, st);
  auto ticket = co_await admit(req, conn, st, keep);
  if (!ticket) co_return false;  // refused (answered) or the client left while queued
  co_return co_await forward(req, conn, std::string(path_of(which)), st);
}

task<bool> handler::handle_other(http::request& req, http::connection& conn, story& st) {
  std::string_view target = path_without_query(req);
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
    else if (!cfg_.router.any_healthy(runtime::steady::now())) why = "no upstream usable";
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
  co_return co_await send_error(
      error::make(errc::not_found, "Unknown request URL: " + std::string(req.method_string()) + " " +
                                       std::string(target) + "."),
      conn, version, keep, st);
}

}  // namespace sluice::proxy
