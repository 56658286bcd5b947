#include "proxy/trace_spans.hpp"

namespace sluice::proxy {
namespace {

using steady_point = runtime::steady::time_point;
constexpr steady_point unset{};

// The route as the server span names it: the path template the gateway serves.
std::string http_route(const request_context& ctx) {
  if (ctx.messages_api) return "/v1/messages";
  if (!ctx.response_id.empty()) return ctx.response_cancel ? "/v1/responses/{id}/cancel" : "/v1/responses/{id}";
  if (ctx.route == obs::route::models && !ctx.model.empty()) return "/v1/models/{model}";
  return ctx.path;
}

obs::span_record child(const request_context& ctx, std::string name, obs::span_kind kind, steady_point start,
                       steady_point end) {
  obs::span_record s;
  s.trace = ctx.trace.trace();
  s.id = obs::new_span_id();
  s.parent = ctx.trace.span();
  s.name = std::move(name);
  s.kind = kind;
  s.start_unix_ns = ctx.trace.unix_ns(start);
  s.end_unix_ns = ctx.trace.unix_ns(end < start ? start : end);
  s.trace_state = ctx.trace.trace_state();
  return s;
}

// Built in place (GCC 12 sees an uninitialized variant in a braced temporary that it then moves).
void add(obs::span_record& s, std::string_view key, std::string_view v) {
  if (v.empty()) return;
  auto& a = s.attributes.emplace_back();
  a.key = key;
  a.value.emplace<std::string>(v);
}
void add(obs::span_record& s, std::string_view key, std::int64_t v) {
  auto& a = s.attributes.emplace_back();
  a.key = key;
  a.value.emplace<std::int64_t>(v);
}

void add_gen_ai_request(obs::span_record& s, const request_context& ctx) {
  add(s, "gen_ai.operation.name", gen_ai_operation(ctx.which));
  if (ctx.route != obs::route::models) add(s, "gen_ai.request.model", ctx.model);
}

obs::span_record server_span(const request_context& ctx, steady_point end) {
  const auto& e = ctx.end;
  obs::span_record s = child(ctx, {}, obs::span_kind::server, ctx.start, end);
  s.attributes.reserve(16);
  s.id = ctx.trace.span();
  s.parent = ctx.trace.parent();
  const std::string route = http_route(ctx);
  s.name = std::string(ctx.trace.method()) + " " + route;
  add(s, "http.request.method", ctx.trace.method());
  add(s, "http.route", route);
  if (e.status) add(s, "http.response.status_code", std::int64_t{e.status});
  add_gen_ai_request(s, ctx);
  add(s, "gen_ai.response.id", ctx.trace.response_id());
  add(s, "gen_ai.response.model", ctx.trace.response_model());
  if (e.tokens_in) add(s, "gen_ai.usage.input_tokens", static_cast<std::int64_t>(e.tokens_in));
  if (e.tokens_out) add(s, "gen_ai.usage.output_tokens", static_cast<std::int64_t>(e.tokens_out));
  add(s, "sluice.request_id", ctx.request_id);
  add(s, "sluice.outcome", obs::to_string(e.outcome));
  if (e.attempts) add(s, "sluice.attempts", static_cast<std::int64_t>(e.attempts));
  add(s, "sluice.upstream", e.upstream);
  if (ctx.job) add(s, "sluice.job", std::string_view("true"));
  if (trace_failed(ctx)) {
    s.error = true;
    s.status_message = e.reason.empty() ? std::string(obs::to_string(e.outcome)) : std::string(e.reason);
    add(s, "error.type", e.status >= 500 ? std::to_string(e.status) : s.status_message);
  }
  return s;
}

obs::span_record attempt_span(const request_context& ctx, const request_trace::attempt& a, std::size_t number,
                              bool answered_stream, steady_point end) {
  // The attempt that answered a stream lasts as long as the stream: its body is read to the end.
  const steady_point to = answered_stream || a.end == unset ? end : a.end;
  const std::string op(gen_ai_operation(ctx.which));
  obs::span_record s = child(ctx, ctx.model.empty() ? op : op + " " + ctx.model, obs::span_kind::client, a.start, to);
  s.id = a.id;
  s.attributes.reserve(10);
  add_gen_ai_request(s, ctx);
  add(s, "server.address", a.host);
  if (a.port) add(s, "server.port", std::int64_t{a.port});
  if (a.status) add(s, "http.response.status_code", std::int64_t{a.status});
  add(s, "sluice.upstream", a.upstream);
  add(s, "sluice.attempt", static_cast<std::int64_t>(number));
  if (answered_stream) {
    add(s, "gen_ai.response.id", ctx.trace.response_id());
    add(s, "gen_ai.response.model", ctx.trace.response_model());
  }
  if (a.failed || a.status >= 500 || a.status == 429) {
    s.error = true;
    s.status_message = a.failed ? "no answer from the upstream" : "upstream answered HTTP " + std::to_string(a.status);
    add(s, "error.type", a.failed ? std::string_view("transport") : std::string_view(std::to_string(a.status)));
  }
  if (a.end == unset && !answered_stream) {
    s.error = true;
    s.status_message = "the attempt did not finish (cancelled)";
  }
  return s;
}

}  // namespace

std::string_view gen_ai_operation(api which) noexcept {
  switch (which) {
    case api::completions: return "text_completion";
    case api::embeddings: return "embeddings";
    case api::moderations: return "moderations";
    default: return "chat";
  }
}

bool trace_failed(const request_context& ctx) noexcept {
  const auto o = ctx.end.outcome;
  return ctx.end.status >= 500 || o == obs::outcome::upstream_error || o == obs::outcome::timeout ||
         o == obs::outcome::internal;
}

std::vector<obs::span_record> trace_spans(const request_context& ctx, runtime::steady::time_point end) {
  const auto& t = ctx.trace;
  std::vector<obs::span_record> out;
  out.reserve(5 + t.attempts().size());
  out.push_back(server_span(ctx, end));
  if (t.admission_end() != unset) out.push_back(child(ctx, "admission", obs::span_kind::internal, t.admission_start(), t.admission_end()));
  if (t.queue_end() != unset) out.push_back(child(ctx, "queue wait", obs::span_kind::internal, t.queue_start(), t.queue_end()));
  const bool stream = ctx.end.kind == end_kind::stream;
  for (std::size_t i = 0; i < t.attempts().size(); ++i) {
    const auto& a = t.attempts()[i];
    const bool answered = stream && i + 1 == t.attempts().size() && a.status / 100 == 2;
    out.push_back(attempt_span(ctx, a, i + 1, answered, end));
  }
  const auto first = ctx.end.first_event;
  if (stream && first != unset) {
    out.push_back(child(ctx, "time to first token", obs::span_kind::internal, ctx.start, first));
    out.push_back(child(ctx, "stream", obs::span_kind::internal, first, end));
  }
  return out;
}

}  // namespace sluice::proxy
