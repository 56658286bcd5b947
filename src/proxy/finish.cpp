// request_ending::finish: the one place a request is logged and counted (request_ending.hpp). One
// log line (stream completed / request completed / request refused) and one sample of
// sluice_requests_total per request, with the same route, outcome and reason. Probes are counted but not logged. A background job's run
// logs "job completed" and is counted in sluice_jobs_total instead.
#include "observability/log.hpp"
#include "proxy/request_ending.hpp"
#include "proxy/trace_spans.hpp"

#include <cstdio>

namespace sluice::proxy {

std::string request_context::overhead_header() const {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", overhead_seconds * 1000.0);
  return buf;
}

double request_ending::trace_ratio() const noexcept {
  return svc_.spans && svc_.tracing ? svc_.tracing->sample_ratio : 0.0;
}

void request_ending::export_trace(const request_context& ctx, runtime::steady::time_point end) noexcept {
  auto* exporter = svc_.spans;
  if (!exporter || !ctx.trace.trace().valid()) return;
  if (!ctx.trace.sampled() && !(svc_.tracing->sample_errors && trace_failed(ctx))) return;
  try {
    exporter->offer(trace_spans(ctx, end));
  } catch (const std::bad_alloc&) {  // no memory for the spans: the trace loses them, not the request
  }
}

void request_ending::finish(request_context& ctx) noexcept {
  const request_end& end = ctx.end;
  auto& m = svc_.requests;
  const auto ended = runtime::steady::now();
  const double total_s = std::chrono::duration<double>(ended - ctx.start).count();
  // A background job's run is not a client's request (its create and reads are): it is counted in
  // sluice_jobs_total, and logged as "job completed".
  if (!ctx.job) {
    m.requests_total(ctx.route, end.outcome).Increment();
    m.request_duration_seconds(ctx.route).observe(total_s);
    if (end.rejection) m.rejected(*end.rejection);
  }
  if (end.kind == end_kind::stream) m.overhead_seconds(obs::stage::relay).observe(end.relay_overhead_seconds);
  if (end.tokens_out) m.tokens_total(obs::direction::completion).Increment(static_cast<double>(end.tokens_out));
  if (end.tokens_in) m.tokens_total(obs::direction::prompt).Increment(static_cast<double>(end.tokens_in));
  if (ctx.route == obs::route::healthz || ctx.route == obs::route::readyz || ctx.route == obs::route::metrics) return;
  export_trace(ctx, ended);

  obs::request_record rec;
  rec.request_id = ctx.request_id;
  char trace_hex[32], span_hex[16];
  if (ctx.trace.trace().valid()) {
    ctx.trace.trace().write_hex(trace_hex);
    ctx.trace.span().write_hex(span_hex);
    rec.trace_id = std::string_view(trace_hex, sizeof trace_hex);
    rec.span_id = std::string_view(span_hex, sizeof span_hex);
  }
  rec.route = obs::to_string(ctx.route);
  rec.upstream = end.upstream;
  rec.outcome = obs::to_string(end.outcome);
  rec.reason = end.reason;
  rec.model = ctx.model;
  rec.status = end.status;
  rec.attempts = end.attempts;
  rec.duration_ms = total_s * 1000.0;
  rec.bytes_in = ctx.bytes_in;
  rec.bytes_out = end.bytes_out;
  rec.job = ctx.job;
  switch (end.kind) {
    case end_kind::stream:
      rec.ttft_ms = end.first_event == runtime::steady::time_point{}
                        ? 0.0
                        : std::chrono::duration<double, std::milli>(end.first_event - ctx.start).count();
      rec.overhead_ms = (ctx.overhead_seconds + end.relay_overhead_seconds) * 1000.0;
      rec.tokens_in = end.tokens_in;
      rec.tokens_out = end.tokens_out;
      obs::log_stream_completed(rec);
      break;
    case end_kind::completed:
      rec.overhead_ms = ctx.overhead_seconds * 1000.0;
      rec.tokens_in = end.tokens_in;
      rec.tokens_out = end.tokens_out;
      obs::log_request_completed(rec);
      break;
    case end_kind::refused: obs::log_request_refused(rec); break;
  }
}

}  // namespace sluice::proxy
