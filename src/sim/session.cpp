// One coroutine per connection: read a request under size limits, route it, write the response,
// repeat while the peer keeps the connection alive.
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/json.hpp>

#include <algorithm>

#include "sim/azure.hpp"
#include "sim/content.hpp"
#include "sim/embeddings.hpp"
#include "sim/media.hpp"
#include "sim/messages.hpp"
#include "sim/moderations.hpp"
#include "sim/objects_route.hpp"
#include "sim/metrics.hpp"
#include "sim/worker.hpp"
#include "sim/ws_realtime.hpp"

namespace sluice::sim {
namespace {

// {"/v1/chat/completions":N,"/v1/completions":N,"/v1/responses":N,"/v1/messages":N}
boost::json::object by_route(const stats& s) {
  boost::json::object o;
  for (std::size_t i = 0; i < api_count; ++i) o[route_of(static_cast<api>(i))] = s.completion_requests_by_api[i];
  return o;
}

std::string stats_body(const stats& s) {
  boost::json::object o{{"requests", s.requests},
                        {"streams_started", s.streams_started},
                        {"streams_completed", s.streams_completed},
                        {"streams_aborted", s.streams_aborted},
                        {"active_streams", s.active_streams},
                        {"peak_active_streams", s.peak_active_streams},
                        {"active_connections", s.active_connections},
                        {"connections_accepted", s.connections_accepted},
                        {"responses_2xx", s.responses_2xx},
                        {"responses_4xx", s.responses_4xx},
                        {"responses_5xx", s.responses_5xx},
                        {"responses_429", s.responses_429},
                        {"requests_with_auth", s.requests_with_auth},
                        {"faults_injected", s.faults_injected},
                        {"completion_requests", s.completion_requests},
                        {"completion_requests_by_route", by_route(s)},
                        {"completions_running", s.completions_running},
                        {"completions_succeeded", s.completions_succeeded},
                        {"rate_limited", s.rate_limited},
                        {"azure_requests", s.azure_requests},
                        {"files_stored", s.files_stored},
                        {"upload_bytes", s.upload_bytes},
                        {"download_bytes", s.download_bytes},
                        {"uploads_aborted", s.uploads_aborted},
                        {"file_store_bytes", s.file_store_bytes},
                        {"stored_objects", s.stored_objects},
                        {"stored_object_bytes", s.stored_object_bytes},
                        {"objects_evicted", s.objects_evicted},
                        {"realtime_sessions", s.realtime_sessions},
                        {"realtime_open", s.realtime_open},
                        {"realtime_messages_in", s.realtime_messages_in},
                        {"realtime_messages_out", s.realtime_messages_out},
                        {"realtime_closed_by_client", s.realtime_closed_by_client},
                        {"realtime_audio_bytes", s.realtime_audio_bytes},
                        {"timer_waits", s.timer_waits},
                        {"timer_late_1ms", s.timer_late_1ms},
                        {"timer_late_10ms", s.timer_late_10ms},
                        {"timer_late_100ms", s.timer_late_100ms},
                        {"timer_late_sum_us", s.timer_late_sum_us},
                        {"timer_late_max_us", s.timer_late_max_us}};
  return boost::json::serialize(o);
}

http::response<http::string_body> json_response(std::string body, bool keep_alive) {
  http::response<http::string_body> res{http::status::ok, 11};
  res.set(http::field::content_type, "application/json");
  res.keep_alive(keep_alive);
  res.body() = std::move(body);
  return res;
}

http::response<http::string_body> metrics_response(worker& w, bool keep_alive) {
  const stats s = w.shared.snapshot();
  engine_sample sample{s.completions_running, s.completions_succeeded, w.shared.control.engine(),
                       s.completion_requests_by_api, s.azure_requests};
  http::response<http::string_body> res{http::status::ok, 11};
  res.set(http::field::content_type, metrics_content_type);
  res.keep_alive(keep_alive);
  res.body() = engine_metrics_text(w.opts.models.front(), sample);
  return res;
}

// GET: the control state; POST: apply the body first (a bad one is a 400 naming the field).
http::response<http::string_body> control_response(worker& w, const http::request<http::string_body>& req,
                                                   bool keep_alive) {
  if (req.method() == http::verb::post) {
    auto u = parse_control(req.body(), w.opts);
    result<void> applied = ok;
    if (u) applied = w.shared.apply_control(std::move(*u));
    const error* e = !u ? &u.err() : !applied ? &applied.err() : nullptr;
    if (e) return make_error(400, keep_alive, e->message, "invalid_request_error", e->param);
  }
  return json_response(w.shared.control.to_json(), keep_alive);
}

// GET /v1/models/{model}: the model's object, or OpenAI's 404 model_not_found.
http::response<http::string_body> model_response(const std::vector<std::string>& models, std::string_view id, bool keep_alive) {
  for (const auto& m : models)
    if (m == id) return json_response(model_body(m), keep_alive);
  return make_error(404, keep_alive, "The model '" + std::string(id) + "' does not exist", "invalid_request_error", "model",
                    "model_not_found");
}

// With --require-key the /v1 routes want the key: `Authorization: Bearer KEY`, or on /v1/messages
// `x-api-key: KEY` (Authorization alone is refused there, as at Anthropic). /v1/messages also wants
// `anthropic-version`. The refusal (401, or 400 naming the header), or nothing.
std::optional<http::response<http::string_body>> refusal(const options& o, const http::request<http::string_body>& req,
                                                         std::string_view target, bool keep) {
  const bool messages = target == "/v1/messages" || target == "/v1/messages/count_tokens";
  auto value = [&req](auto name) -> std::optional<std::string_view> {
    auto it = req.find(name);
    return it == req.end() ? std::nullopt : std::optional<std::string_view>(it->value());
  };
  if (!o.require_key.empty() && target.starts_with("/v1/")) {
    if (messages) {
      auto key = value("x-api-key");
      if (!key || *key != o.require_key)
        return make_api_error(api::messages, 401, keep, key ? "invalid x-api-key" : "x-api-key header is required",
                              "authentication_error");
    } else {
      auto auth = value(http::field::authorization);
      if (!auth)
        return make_error(401, keep, "You didn't provide an API key. You need to provide your API key in an "
                          "Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
                          "invalid_request_error");
      if (*auth != "Bearer " + o.require_key)
        return make_error(401, keep, "Incorrect API key provided.", "invalid_request_error", {}, "invalid_api_key");
    }
  }
  if (messages && req.method() == http::verb::post && !value("anthropic-version"))
    return make_api_error(api::messages, 400, keep, "anthropic-version: header is required", "invalid_request_error");
  return std::nullopt;
}

// The completion route of a path, if it is one.
std::optional<api> completion_api(std::string_view target) {
  for (std::size_t i = 0; i < api_count; ++i)
    if (target == route_of(static_cast<api>(i))) return static_cast<api>(i);
  return std::nullopt;
}

std::optional<std::string_view> header_value(const http::request<http::string_body>& req, std::string_view name) {
  auto it = req.find(name);
  return it == req.end() ? std::nullopt : std::optional<std::string_view>(it->value());
}

// An /openai/... request (sim/azure.hpp): counted, then the key and api-version rules, then its route
// served as the matching /v1 one, the deployment standing for the model. Errors in OpenAI's shape
// with Azure's codes ("401", "BadRequest", "404").
task<response_end> route_azure(connection& c, const http::request<http::string_body>& req, bool keep) {
  counters::inc(c.owner.count.azure_requests);
  const std::string_view target = req.target();
  const std::string_view path = target.substr(0, target.find('?'));
  const auto refused = check_azure_request(c.owner.opts.require_key, header_value(req, "api-key"),
                                           req.find(http::field::authorization) != req.end(), target);
  const auto route = refused ? std::nullopt : parse_azure_path(path);
  const bool want_get = route && route->op == azure_op::models;
  std::optional<http::response<http::string_body>> res;
  if (refused) {
    res = make_error(refused->status, keep, refused->message, "invalid_request_error", {}, refused->code);
  } else if (!route) {
    res = make_error(404, keep, azure_not_found_message, "invalid_request_error", {}, azure_not_found_code);
  } else if (req.method() != (want_get ? http::verb::get : http::verb::post)) {
    res = make_error(405, keep, "Method " + std::string(req.method_string()) + " not allowed for " + std::string(path),
                     "invalid_request_error");
  } else if (const auto kind = completion_api_of(route->op)) {
    auto end = co_await serve_completion(c, *kind, req, route->deployment);
    co_return end;
  } else if (want_get) {
    res = json_response(models_body(c.owner.opts.models), keep);
  } else {
    auto body = embeddings_body(req.body(), route->deployment);
    res = body ? json_response(std::move(*body), keep)
               : make_error(400, keep, body.err().message, "invalid_request_error", body.err().param);
  }
  co_return co_await write_simple(c, *res);
}

bool is_parse_error(const error_code& ec) {
  return ec.category() == boost::beast::http::make_error_code(http::error::bad_version).category() &&
         ec != http::error::end_of_stream && ec != http::error::partial_message;
}

task<response_end> route(connection& c, const http::request<http::string_body>& req) {
  std::string_view target = req.target();
  target = target.substr(0, target.find('?'));
  const bool keep = req.keep_alive();
  const bool post = req.method() == http::verb::post, get = req.method() == http::verb::get;

  if (is_azure_path(target)) co_return co_await route_azure(c, req, keep);
  if (auto refused = refusal(c.owner.opts, req, target, keep)) co_return co_await write_simple(c, *refused);
  if (is_media_path(target)) co_return co_await route_media(c, req, target);
  if (is_realtime_path(target)) co_return co_await serve_realtime(c, req);
  if (const auto kind = completion_api(target)) {
    if (post) co_return co_await serve_completion(c, *kind, req);
  } else if (target == "/v1/messages/count_tokens") {
    if (post) {
      auto body = count_tokens_body(req.body());
      auto res = body ? json_response(std::move(*body), keep)
                      : make_api_error(api::messages, 400, keep, body.err().message, "invalid_request_error");
      co_return co_await write_simple(c, res);
    }
  } else if (target == "/v1/embeddings" || target == "/v1/moderations") {
    if (post) {
      auto body = target == "/v1/embeddings" ? embeddings_body(req.body()) : moderations_body(req.body());
      auto res = body ? json_response(std::move(*body), keep)
                      : make_error(400, keep, body.err().message, "invalid_request_error", body.err().param);
      co_return co_await write_simple(c, res);
    }
  } else if (target == "/v1/models") {
    if (get) {
      auto res = json_response(models_body(c.owner.opts.models), keep);
      co_return co_await write_simple(c, res);
    }
  } else if (target.starts_with("/v1/models/")) {
    if (get) {
      auto res = model_response(c.owner.opts.models, target.substr(std::string_view("/v1/models/").size()), keep);
      co_return co_await write_simple(c, res);
    }
  } else if (target == "/sim/stats" || target == "/metrics") {
    if (get) {
      auto res = target == "/metrics" ? metrics_response(c.owner, keep)
                                      : json_response(stats_body(c.owner.shared.snapshot()), keep);
      co_return co_await write_simple(c, res);
    }
  } else if (target == "/sim/control") {
    if (get || post) {
      auto res = control_response(c.owner, req, keep);
      co_return co_await write_simple(c, res);
    }
  } else if (is_objects_path(target)) {
    co_return co_await route_objects(c, req);
  } else {
    std::string msg = "Invalid URL (" + std::string(req.method_string()) + " " + std::string(target) + ")";
    auto res = make_error(404, keep, msg, "invalid_request_error");
    co_return co_await write_simple(c, res);
  }
  auto res = make_error(405, keep, "Method " + std::string(req.method_string()) + " not allowed for " + std::string(target),
                        "invalid_request_error");
  co_return co_await write_simple(c, res);
}

void count_request(worker& w, const http::request<http::string_body>& req) {
  counters::inc(w.count.requests);
  if (req.find(http::field::authorization) != req.end() || req.find("x-api-key") != req.end() ||
      req.find("api-key") != req.end())
    counters::inc(w.count.requests_with_auth);
}

std::optional<upload_route> streamed_upload(const http::request<http::string_body>& head) {
  const std::string_view target = head.target();
  return upload_route_of(head.method(), target.substr(0, target.find('?')));
}

// One request whose head has been read: a streamed upload goes on with its body unread (counted
// now; a client may leave mid-body); any other request reads its body whole under max-body, is
// counted, then routed. A failed read leaves its error in `ec`.
task<response_end> serve_request(connection& c, http::request_parser<http::string_body>& parser, error_code& ec) {
  worker& w = c.owner;
  if (const auto upload = streamed_upload(parser.get())) {
    count_request(w, parser.get());
    const std::string_view target = parser.get().target();
    auto refused = refusal(w.opts, parser.get(), target.substr(0, target.find('?')), parser.get().keep_alive());
    auto end = co_await serve_upload(c, parser, *upload, std::move(refused));
    co_return end;
  }
  if (parser.content_length() && *parser.content_length() > w.opts.max_body_bytes) {
    ec = http::error::body_limit;
    co_return response_end::close;
  }
  parser.body_limit(w.opts.max_body_bytes);
  co_await http::async_read(c.socket, c.buffer, parser, ec_out(ec));
  if (ec) co_return response_end::close;
  const auto& req = parser.get();
  count_request(w, req);
  auto end = co_await route(c, req);
  if (end == response_end::done && !req.keep_alive()) end = response_end::close;
  co_return end;
}

}  // namespace

http::response<http::string_body> make_api_error(api kind, unsigned status, bool keep_alive, std::string_view message,
                                                 std::string_view type, std::string_view param, std::string_view code) {
  auto res = make_error(status, keep_alive, message, type, param, code);
  if (kind == api::messages) res.body() = anthropic_error_body(anthropic_error_type(static_cast<int>(status)), message);
  return res;
}

http::response<http::string_body> make_error(unsigned status, bool keep_alive, std::string_view message,
                                             std::string_view type, std::string_view param, std::string_view code) {
  http::response<http::string_body> res{static_cast<http::status>(status), 11};
  if (status == 529) res.reason("Overloaded");  // Anthropic's status, unknown to Beast
  res.set(http::field::content_type, "application/json");
  res.keep_alive(keep_alive);
  res.body() = error_body(message, type, param, code);
  return res;
}

task<response_end> write_simple(connection& c, http::response<http::string_body>& res) {
  res.prepare_payload();
  // Counted before the write so a client that has read the response always sees it in the stats.
  c.owner.count.count_status(res.result_int());
  error_code ec;
  co_await http::async_write(c.socket, res, ec_out(ec));
  if (ec) co_return response_end::peer_gone;
  co_return res.keep_alive() ? response_end::done : response_end::close;
}

task<void> run_session(tcp::socket socket, worker* w) {
  connection c(std::move(socket), *w);
  const options& o = w->opts;
  while (!w->stopping) {
    error_code ec;
    std::optional<response_end> end;
    std::uint64_t body_cap = o.max_body_bytes;
    {
      // The parser (and the request body in it) lives for one request only. The head comes first:
      // a streamed upload then reads its body in pieces under max-upload, any other request whole
      // under max-body (serve_request), so the head's own check of Content-Length takes the larger.
      http::request_parser<http::string_body> parser;
      parser.header_limit(static_cast<std::uint32_t>(o.max_header_bytes));
      parser.body_limit(std::max(o.max_body_bytes, o.max_upload_bytes));
      co_await http::async_read_header(c.socket, c.buffer, parser, ec_out(ec));
      if (streamed_upload(parser.get())) body_cap = o.max_upload_bytes;  // a 413 names the cap that refused
      if (!ec) end = co_await serve_request(c, parser, ec);
    }
    if (ec) {
      // Malformed or oversized requests get an answer; then the connection ends, because the
      // rest of the byte stream cannot be trusted to start at a message boundary.
      std::optional<http::response<http::string_body>> res;
      if (ec == http::error::body_limit)
        res = make_error(413, false, "Request body exceeds " + format_size(body_cap), "invalid_request_error");
      else if (ec == http::error::header_limit)
        res = make_error(431, false, "Request header fields too large", "invalid_request_error");
      else if (is_parse_error(ec))
        res = make_error(400, false, "Malformed HTTP request: " + ec.message(), "invalid_request_error");
      if (res) {
        auto ignored_end = co_await write_simple(c, *res);
        (void)ignored_end;
      }
      break;
    }
    if (*end != response_end::done) break;
    // A large request body grew the buffer; do not keep that memory for an idle keep-alive peer.
    if (c.buffer.size() == 0 && c.buffer.capacity() > 16 * 1024) c.buffer.shrink_to_fit();
  }
  error_code ignored;
  if (c.socket.is_open()) c.socket.shutdown(tcp::socket::shutdown_send, ignored);
}

}  // namespace sluice::sim
