// request_trace: one request's part of a distributed trace (W3C Trace Context; docs/operations.md,
// "Traces"). The trace it continues (the client's traceparent) or starts, the gateway's server span,
// the sampling decision, and the moments of its phases: admission, the queue wait, each upstream
// attempt (each with a span id of its own, sent upstream in its traceparent, so retries and
// failovers show as sibling spans). Spans are built from these only when the request ends
// (trace_spans.cpp), and only for a sampled or failed request. Lives in request_context: small,
// one thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/types.hpp"
#include "observability/trace_context.hpp"
#include "proxy/relay/stream_identity.hpp"
#include "runtime/watchdog.hpp"

namespace sluice::proxy {

class request_trace final : public stream_identity {
 public:
  struct attempt {
    obs::span_id id;
    runtime::steady::time_point start{}, end{};
    std::string_view upstream;  // the upstream's configured name (routing's, lives as long as the gateway)
    std::string_view host;      // its address, for server.address
    std::uint16_t port = 0;
    int status = 0;             // the upstream's HTTP status (0: none)
    bool failed = false;        // no answer (connect, send, read) or a failed read of its body
  };
  // Attempts with a span of their own; later ones still carry a traceparent, without a span.
  static constexpr std::size_t max_recorded_attempts = 16;

  // Continues the request's traceparent when it is well-formed (its sampled flag decides), else
  // starts a trace (sampled by `ratio`); a new server span either way. It also pins the steady
  // clock to wall time for the exported spans.
  void begin(const http::request& req, double ratio);

  const obs::trace_id& trace() const noexcept { return trace_; }
  const obs::span_id& span() const noexcept { return span_; }
  const obs::span_id& parent() const noexcept { return parent_; }
  bool sampled() const noexcept { return sampled_; }
  const std::string& trace_state() const noexcept { return state_; }
  std::string_view method() const noexcept { return method_; }
  // The traceparent a hop below this request carries (an upstream attempt's, a queued job's).
  std::string traceparent_for(const obs::span_id& child) const;

  // A job's stored headers (a background or queued request): the client's traceparent and
  // tracestate replaced by this request's, so the worker that runs it continues this trace under
  // the span of the request that queued it.
  void carry_into(std::vector<std::pair<std::string, std::string>>& headers) const;

  // An upstream attempt begins: its span id (its traceparent names it as the parent).
  const obs::span_id& attempt_began(std::string_view upstream, std::string_view host, std::uint16_t port);
  void attempt_ended(int status, bool failed) noexcept;
  const std::vector<attempt>& attempts() const noexcept { return attempts_; }

  void admission(runtime::steady::time_point start, runtime::steady::time_point end) noexcept;
  void queue_wait(runtime::steady::time_point start, runtime::steady::time_point end) noexcept;
  runtime::steady::time_point admission_start() const noexcept { return admission_start_; }
  runtime::steady::time_point admission_end() const noexcept { return admission_end_; }
  runtime::steady::time_point queue_start() const noexcept { return queue_start_; }
  runtime::steady::time_point queue_end() const noexcept { return queue_end_; }

  // The upstream's own id and model for its answer (gen_ai.response.id, .model): read from a whole
  // answer's body or a stream's first event (`id`/`model`, or `response.id`/`.model` of a Responses
  // lifecycle event), once. Costs a JSON parse: callers ask only for sampled requests. A payload
  // over identify_max_bytes (a large whole answer: embeddings) is not parsed, so that a sampled
  // request never builds a document the size of its answer; its spans then lack the two attributes.
  static constexpr std::size_t identify_max_bytes = 64 * 1024;
  void identify(std::string_view payload) override;
  bool identified() const noexcept { return identified_; }
  const std::string& response_id() const noexcept { return response_id_; }
  const std::string& response_model() const noexcept { return response_model_; }

  // A steady-clock moment as Unix nanoseconds (the offset taken once, by begin()).
  std::uint64_t unix_ns(runtime::steady::time_point t) const noexcept;

 private:
  obs::trace_id trace_;
  obs::span_id span_;
  obs::span_id parent_;  // the client's span (all zero: sluice started the trace)
  std::string_view method_ = "POST";  // Beast's static name of the request's method
  bool sampled_ = false;
  std::string state_;
  obs::span_id spare_;  // the id of an attempt past the recorded ones
  std::vector<attempt> attempts_;
  runtime::steady::time_point admission_start_{}, admission_end_{}, queue_start_{}, queue_end_{};
  std::int64_t unix_offset_ns_ = 0;
  bool identified_ = false;
  std::string response_id_, response_model_;
};

}  // namespace sluice::proxy
