// The probe endpoints, beside the completion path (probes.cpp): GET /healthz (alive), /readyz
// (draining, memory, no upstream usable: 503) and /metrics (the Prometheus exposition).
#pragma once

#include "proxy/request_context.hpp"
#include "proxy/shared_config.hpp"

namespace sluice::proxy {

// Answers ctx's probe route (ctx.route is healthz, readyz or metrics).
task<void> serve_probe(request_context& ctx, const shared_config& cfg);

}  // namespace sluice::proxy
