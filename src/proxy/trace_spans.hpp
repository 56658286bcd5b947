// The spans of one finished request, built from its request_context when it ends (request_ending::finish):
// the gateway's server span and, under it, admission, the queue wait, each upstream attempt (client
// spans), time to first token and the stream. Attribute names follow the OpenTelemetry semantic
// conventions 1.29.0: HTTP (http.request.method, http.route, http.response.status_code,
// server.address, server.port, error.type) and GenAI (gen_ai.operation.name,
// gen_ai.request.model, gen_ai.response.model, gen_ai.response.id, gen_ai.usage.input_tokens,
// gen_ai.usage.output_tokens); sluice's own under sluice.*. Pure; the caller's thread.
#pragma once

#include <vector>

#include "observability/span.hpp"
#include "proxy/request_context.hpp"

namespace sluice::proxy {

// The request failed in the gateway's or the upstream's part (a 5xx, an upstream error, a timeout,
// a bug): its spans are exported whatever the sampling when trace-errors is on.
bool trace_failed(const request_context& ctx) noexcept;

// Every span of the request, the server span first; `end` is when it ended.
std::vector<obs::span_record> trace_spans(const request_context& ctx, runtime::steady::time_point end);

// gen_ai.operation.name of an API: chat, text_completion, embeddings, moderations.
std::string_view gen_ai_operation(api which) noexcept;

}  // namespace sluice::proxy
