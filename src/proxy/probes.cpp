// The probe endpoints, beside the completion path: liveness, readiness (draining, memory, no
// upstream usable) and the Prometheus exposition. Counted in sluice_requests_total like every
// request; not logged (a scrape every few seconds would drown the request lines).
#include "proxy/probes.hpp"

#include "proxy/answers.hpp"

namespace sluice::proxy {

task<void> serve_probe(request_context& ctx, const shared_config& cfg) {
  const auto& svc = cfg.svc;
  if (ctx.route == obs::route::healthz)
    co_return co_await send_json(ctx, bhttp::status::ok, R"({"status":"ok"})", "application/json");
  if (ctx.route == obs::route::metrics) {
    std::string text = svc.metrics.serialize();
    if (svc.pod_metrics) text = co_await svc.pod_metrics(std::move(text));
    co_return co_await send_json(ctx, bhttp::status::ok, std::move(text), obs::metrics_registry::content_type);
  }
  std::string_view why;
  if (svc.drain.draining.load()) why = "draining";
  else if (!svc.budget.ready()) why = "memory";
  else if (!cfg.router.any_healthy(runtime::steady::now())) why = "no upstream usable";
  if (why.empty()) co_return co_await send_json(ctx, bhttp::status::ok, R"({"status":"ready"})", "application/json");
  co_await send_json(ctx, bhttp::status::service_unavailable,
                     R"({"status":"not ready","reason":")" + std::string(why) + R"("})", "application/json");
}

}  // namespace sluice::proxy
