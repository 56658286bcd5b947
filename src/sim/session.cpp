// One coroutine per connection: read a request under size limits, route it, write the response,
// repeat while the peer keeps the connection alive.
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/json.hpp>

#include "sim/content.hpp"
#include "sim/embeddings.hpp"
#include "sim/moderations.hpp"
#include "sim/metrics.hpp"
#include "sim/worker.hpp"

namespace sluice::sim {
namespace {

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
                        {"completions_running", s.completions_running},
                        {"completions_succeeded", s.completions_succeeded},
                        {"rate_limited", s.rate_limited},
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
  engine_sample sample{s.completions_running, s.completions_succeeded, w.shared.control.engine()};
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
    if (u) applied = w.shared.control.apply(std::move(*u));
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

bool is_parse_error(const error_code& ec) {
  return ec.category() == boost::beast::http::make_error_code(http::error::bad_version).category() &&
         ec != http::error::end_of_stream && ec != http::error::partial_message;
}

task<response_end> route(connection& c, const http::request<http::string_body>& req) {
  std::string_view target = req.target();
  target = target.substr(0, target.find('?'));
  const bool keep = req.keep_alive();
  const bool post = req.method() == http::verb::post, get = req.method() == http::verb::get;

  if (target == "/v1/chat/completions" || target == "/v1/completions" || target == "/v1/responses") {
    if (post) {
      const api kind = target == "/v1/completions" ? api::completion : target == "/v1/responses" ? api::responses : api::chat;
      auto end = co_await serve_completion(c, kind, req);
      co_return end;
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
  } else if (target == "/sim/stats") {
    if (get) {
      auto res = json_response(stats_body(c.owner.shared.snapshot()), keep);
      co_return co_await write_simple(c, res);
    }
  } else if (target == "/metrics") {
    if (get) {
      auto res = metrics_response(c.owner, keep);
      co_return co_await write_simple(c, res);
    }
  } else if (target == "/sim/control") {
    if (get || post) {
      auto res = control_response(c.owner, req, keep);
      co_return co_await write_simple(c, res);
    }
  } else {
    std::string msg = "Invalid URL (" + std::string(req.method_string()) + " " + std::string(target) + ")";
    auto res = make_error(404, keep, msg, "invalid_request_error");
    co_return co_await write_simple(c, res);
  }
  auto res = make_error(405, keep, "Method " + std::string(req.method_string()) + " not allowed for " + std::string(target),
                        "invalid_request_error");
  co_return co_await write_simple(c, res);
}

}  // namespace

http::response<http::string_body> make_error(unsigned status, bool keep_alive, std::string_view message,
                                             std::string_view type, std::string_view param, std::string_view code) {
  http::response<http::string_body> res{static_cast<http::status>(status), 11};
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
    {
      // The parser (and the request body in it) lives for one request only.
      http::request_parser<http::string_body> parser;
      parser.header_limit(static_cast<std::uint32_t>(o.max_header_bytes));
      parser.body_limit(o.max_body_bytes);
      co_await http::async_read(c.socket, c.buffer, parser, ec_out(ec));
      if (!ec) {
        const auto& req = parser.get();
        counters::inc(w->count.requests);
        if (req.find(http::field::authorization) != req.end()) counters::inc(w->count.requests_with_auth);
        end = co_await route(c, req);
        if (*end == response_end::done && !req.keep_alive()) end = response_end::close;
      }
    }
    if (ec) {
      // Malformed or oversized requests get an answer; then the connection ends, because the
      // rest of the byte stream cannot be trusted to start at a message boundary.
      std::optional<http::response<http::string_body>> res;
      if (ec == http::error::body_limit)
        res = make_error(413, false, "Request body exceeds " + format_size(o.max_body_bytes), "invalid_request_error");
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
