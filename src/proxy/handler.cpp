#include "proxy/handler.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>

#include "http/error_response.hpp"
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

}  // namespace

handler::handler(net::any_io_executor ex, const shared_config& cfg, upstream::ssl::context* tls)
    : cfg_(cfg), client_(std::move(ex), cfg.upstream, cfg.target, tls) {}

task<void> handler::reject(const error& e, http::connection& conn) {
  auto res = http::make_error_response(e, 11, false);
  res.set("x-request-id", generate_request_id());
  co_await conn.write(res);
}

task<bool> handler::send_error(const error& e, http::connection& conn, unsigned version, bool keep_alive,
                               const std::string& request_id) {
  auto res = http::make_error_response(e, version, keep_alive);
  res.set("x-request-id", request_id);
  auto w = co_await conn.write(res);
  co_return w.has_value() && keep_alive;
}

task<bool> handler::handle(http::request req, http::connection& conn) {
  std::string request_id;
  if (auto it = req.find("x-request-id"); it != req.end() && is_sane_request_id(it->value()))
    request_id = std::string(it->value());
  else
    request_id = generate_request_id();

  std::string_view target = req.target();
  if (auto q = target.find('?'); q != std::string_view::npos) target = target.substr(0, q);
  const bool keep = req.keep_alive();
  const auto method = req.method();

  auto method_is = [&](bhttp::verb v, std::string_view allow) -> std::optional<error> {
    if (method == v) return std::nullopt;
    return error::make(errc::method_not_allowed,
                       "Method " + std::string(req.method_string()) + " is not allowed on " + std::string(target) +
                           "; use " + std::string(allow) + ".");
  };

  if (target == "/healthz") {
    if (auto e = method_is(bhttp::verb::get, "GET")) co_return co_await send_error(*e, conn, req.version(), keep, request_id);
    http::response res{bhttp::status::ok, req.version()};
    res.set(bhttp::field::content_type, "application/json");
    res.set("x-request-id", request_id);
    res.body() = R"({"status":"ok"})";
    res.keep_alive(keep);
    res.prepare_payload();
    auto w = co_await conn.write(res);
    co_return w.has_value() && keep;
  }
  if (target == "/v1/models") {
    if (auto e = method_is(bhttp::verb::get, "GET")) co_return co_await send_error(*e, conn, req.version(), keep, request_id);
    co_return co_await forward(req, conn, "/v1/models", false, request_id);
  }
  if (target == "/v1/chat/completions" || target == "/v1/completions") {
    if (auto e = method_is(bhttp::verb::post, "POST")) co_return co_await send_error(*e, conn, req.version(), keep, request_id);
    auto summary = validate_request(target == "/v1/completions" ? api::completions : api::chat_completions, req.body());
    if (!summary) co_return co_await send_error(summary.err(), conn, req.version(), keep, request_id);
    co_return co_await forward(req, conn, std::string(target), summary->stream, request_id);
  }
  co_return co_await send_error(
      error::make(errc::not_found, "Unknown request URL: " + std::string(req.method_string()) + " " +
                                       std::string(target) + "."),
      conn, req.version(), keep, request_id);
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
  struct cancel_on_exit {
    http::connection& c;
    ~cancel_on_exit() { c.cancel(); }
  } guard{conn};
  co_return co_await client_.send(req, abort);
}

task<result<std::string>> handler::read_body(upstream::response& up, http::connection& conn) {
  struct cancel_on_exit {
    http::connection& c;
    ~cancel_on_exit() { c.cancel(); }
  } guard{conn};
  co_return co_await up.read_all(static_cast<std::size_t>(cfg_.upstream.max_response_body));
}

task<bool> handler::forward(http::request& req, http::connection& conn, std::string path, bool stream,
                            const std::string& request_id) {
  const unsigned version = req.version();
  const bool keep = req.keep_alive();

  upstream::request up_req{req.method(), cfg_.target.base_path + path, 11};
  for (const auto& f : req) {
    if (forwardable(f.name_string())) up_req.set(f.name_string(), f.value());
  }
  if (!cfg_.authorization.empty()) {
    up_req.set(bhttp::field::authorization, cfg_.authorization);
  } else if (auto it = req.find(bhttp::field::authorization); it != req.end()) {
    up_req.set(bhttp::field::authorization, it->value());  // pass-through mode: no key configured
  }
  up_req.set("x-request-id", request_id);
  if (req.method() == bhttp::verb::post) {
    up_req.set(bhttp::field::content_type, "application/json");
    up_req.body() = std::move(req.body());
  }
  up_req.set(bhttp::field::accept, stream ? "text/event-stream" : "application/json");

  // Abort handle first: the response refers to it and must die before it.
  upstream::abort_handle abort;
  std::unique_ptr<upstream::response> up;
  {
    conn.rearm();
    auto sent = co_await (send_upstream(up_req, abort, conn) || watch_client(conn, abort));
    conn.rearm();
    if (sent.index() == 1) co_return false;  // the client left while we waited for the upstream
    auto& r = std::get<0>(sent);
    if (!r) {
      if (r.err().code == errc::cancelled) co_return false;
      co_return co_await send_error(r.err(), conn, version, keep, request_id);
    }
    up = std::move(*r);
  }
  up_req.body().clear();
  up_req.body().shrink_to_fit();

  const unsigned status = up->status();
  std::string_view ctype = up->head()[bhttp::field::content_type];
  const bool is_sse = status / 100 == 2 && ctype.substr(0, 17) == "text/event-stream";

  if (is_sse) {
    bhttp::response<bhttp::empty_body> head{static_cast<bhttp::status>(status), version};
    head.set(bhttp::field::content_type, "text/event-stream");
    head.set(bhttp::field::cache_control, "no-cache");
    head.set("x-accel-buffering", "no");
    head.set("x-request-id", request_id);
    for (const auto& f : up->head())
      if (passback(f.name_string())) head.set(f.name_string(), f.value());
    head.keep_alive(keep);
    sse_relay relay(conn, *up, cfg_.proxy);
    auto result = co_await relay.run(head);
    co_return keep && result.completed && !result.client_gone && !result.failure;
  }

  // Whole body (JSON answers and errors): read under its bound, then answer in one piece.
  conn.rearm();
  auto read = co_await (read_body(*up, conn) || watch_client(conn, abort));
  conn.rearm();
  if (read.index() == 1) co_return false;
  auto& body = std::get<0>(read);
  if (!body) {
    if (body.err().code == errc::cancelled) co_return false;
    co_return co_await send_error(body.err(), conn, version, keep, request_id);
  }
  http::response res{static_cast<bhttp::status>(status), version};
  res.set(bhttp::field::content_type, ctype.empty() ? std::string_view("application/json") : ctype);
  res.set("x-request-id", request_id);
  for (const auto& f : up->head())
    if (passback(f.name_string())) res.set(f.name_string(), f.value());
  res.body() = status / 100 == 2 ? std::move(*body) : upstream_error_body(status, *body);
  if (status / 100 != 2) res.set(bhttp::field::content_type, "application/json");
  res.keep_alive(keep);
  res.prepare_payload();
  auto w = co_await conn.write(res);
  co_return w.has_value() && keep;
}

}  // namespace sluice::proxy
