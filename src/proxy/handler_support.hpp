// Small pieces the handler's files share (handler.cpp, handler_admit.cpp, handler_forward.cpp,
// handler_structured.cpp): header filters, error bodies, outcome mapping. Internal to proxy/.
#pragma once

#include <string>
#include <string_view>

#include "admission/controller.hpp"
#include "http/connection.hpp"
#include "observability/metrics.hpp"
#include "runtime/watchdog.hpp"

namespace sluice::proxy::detail {

bool starts_with_ci(std::string_view s, std::string_view prefix);
// Client headers worth passing on: OpenAI's own and custom x- headers, never hop-by-hop ones, never
// the client's credentials when sluice holds the upstream key, never sluice's own controls.
bool forwardable(std::string_view name);
// Upstream response headers worth passing back to the client.
bool passback(std::string_view name);
// A non-2xx upstream body becomes the client's error body: kept when already OpenAI-shaped.
std::string upstream_error_body(unsigned status, const std::string& body);
double seconds_since(runtime::steady::time_point t);
obs::outcome outcome_of_status(unsigned status);
obs::reject_reason reason_of(admission::refusal r);

// Cancels the client socket's pending operations on scope exit: the side of a race that ends
// first makes the watcher beside it end too.
struct cancel_on_exit {
  http::connection& c;
  ~cancel_on_exit() { c.cancel(); }
};

}  // namespace sluice::proxy::detail
