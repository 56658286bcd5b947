// How a request's end becomes its labels: the outcome of an HTTP status, an error or a stream's
// end, the reason label of an error, and the admission refusals with their messages. The one place
// errors become the outcome and reason that the log line and sluice_requests_total share. Pure.
#pragma once

#include <string_view>

#include "admission/controller.hpp"
#include "core/error.hpp"
#include "observability/metrics.hpp"

namespace sluice::proxy {

obs::outcome outcome_of_status(unsigned status) noexcept;
// An error answered instead of an upstream answer: internal errors are `internal`, the rest by
// the status they map to.
obs::outcome outcome_of_error(const error& e) noexcept;
// A relayed stream that broke after its head: by the error's source.
obs::outcome outcome_of_stream_failure(const error& e) noexcept;
// The reason label of an error: its OpenAI code when sluice set one (model_not_found,
// schema_violation, ...), else the errc name (upstream_timeout, bad_request, ...). Static strings.
std::string_view reason_of(const error& e) noexcept;

// The x-should-retry header (honoured by the official SDKs) of an answer that is not a success:
// whether the same request, sent again, may succeed. `e` is sluice's own error, or null for an
// upstream's non-2xx relayed as it came. False where a retry cannot help (4xx, a schema violation
// under reject, the gateway's own key refused); true for 408/409/429, overload, timeouts and
// other 5xx.
bool should_retry_value(unsigned status, const error* e) noexcept;
inline std::string_view should_retry_text(bool retry) noexcept { return retry ? "true" : "false"; }

obs::reject_reason reject_reason_of(admission::refusal r) noexcept;
// The 503 a refusal from the admission queue is answered with.
error admission_error(admission::refusal r);

}  // namespace sluice::proxy
