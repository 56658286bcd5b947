#include "proxy/upstream_metrics.hpp"

#include <prometheus/metric_family.h>

namespace sluice::proxy {

namespace pm = prometheus;

std::string_view to_string(retry_reason r) noexcept {
  switch (r) {
    case retry_reason::connect: return "connect";
    case retry_reason::timeout: return "timeout";
    case retry_reason::status_429: return "status_429";
    case retry_reason::status_5xx: return "status_5xx";
    case retry_reason::protocol: return "protocol";
  }
  return "connect";
}

std::string_view to_string(hold_reason r) noexcept {
  switch (r) {
    case hold_reason::paced: return "paced";
    case hold_reason::engine: return "engine";
    case hold_reason::concurrency: return "concurrency";
  }
  return "paced";
}

upstream_metrics::upstream_metrics(routing::router& r)
    : r_(r),
      retries_(std::make_unique<std::array<std::atomic<std::uint64_t>, retry_reason_count>[]>(r.size())),
      responses_(std::make_unique<std::array<std::atomic<std::uint64_t>, obs::upstream_status_slots>[]>(r.size())) {}

void upstream_metrics::responded(std::size_t upstream, int http_status) noexcept {
  if (upstream < r_.size())
    responses_[upstream][obs::upstream_status_slot(http_status)].fetch_add(1, std::memory_order_relaxed);
}

void upstream_metrics::retried(std::size_t upstream, retry_reason why) noexcept {
  if (upstream < r_.size()) retries_[upstream][static_cast<std::size_t>(why)].fetch_add(1, std::memory_order_relaxed);
}

void upstream_metrics::held(hold_reason why, double seconds) noexcept {
  auto i = static_cast<std::size_t>(why);
  holds_[i].fetch_add(1, std::memory_order_relaxed);
  hold_micros_[i].fetch_add(static_cast<std::uint64_t>(seconds * 1e6), std::memory_order_relaxed);
}

namespace {

pm::MetricFamily family(std::string name, std::string help, pm::MetricType type) {
  pm::MetricFamily f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = type;
  return f;
}

void sample(pm::MetricFamily& f, std::vector<pm::ClientMetric::Label> labels, double v) {
  pm::ClientMetric m;
  m.label = std::move(labels);
  if (f.type == pm::MetricType::Counter) m.counter.value = v;
  else m.gauge.value = v;
  f.metric.push_back(std::move(m));
}

}  // namespace

std::vector<pm::MetricFamily> upstream_metrics::Collect() const {
  const auto now = std::chrono::steady_clock::now();
  auto circuit = family("sluice_upstream_circuit_state", "circuit breaker state: 0 closed, 1 half-open, 2 open",
                        pm::MetricType::Gauge);
  auto opens = family("sluice_upstream_circuit_opens_total", "times the upstream's circuit opened",
                      pm::MetricType::Counter);
  auto outstanding = family("sluice_upstream_outstanding_requests", "requests in flight to the upstream",
                            pm::MetricType::Gauge);
  auto healthy = family("sluice_upstream_healthy", "1 when the upstream can take traffic (circuit not open, probe ok)",
                        pm::MetricType::Gauge);
  auto saturated = family("sluice_upstream_engine_saturated",
                          "1 while the engine behind the upstream reports saturation (requests are held)",
                          pm::MetricType::Gauge);
  auto budget = family("sluice_upstream_ratelimit_remaining",
                       "paced budget left at the upstream as sluice tracks it (known limits only)", pm::MetricType::Gauge);
  auto retries = family("sluice_upstream_retries_total", "attempts retried, by the upstream that failed and why",
                        pm::MetricType::Counter);
  auto responses = family("sluice_upstream_requests_total",
                          "Requests sent to upstreams, by upstream and response status (error: no response).",
                          pm::MetricType::Counter);
  for (std::size_t i = 0; i < r_.size(); ++i) {
    auto& u = r_.at(i);
    const std::string& name = u.spec.name;
    for (std::size_t k = 0; k < obs::upstream_status_slots; ++k)
      sample(responses, {{"status", std::string(obs::upstream_status_slot_label(k))}, {"upstream", name}},
             static_cast<double>(responses_[i][k].load(std::memory_order_relaxed)));
    auto st = u.breaker.state(now);
    sample(circuit, {{"upstream", name}}, static_cast<double>(static_cast<int>(st)));
    sample(opens, {{"upstream", name}}, static_cast<double>(u.breaker.times_opened()));
    sample(outstanding, {{"upstream", name}}, static_cast<double>(u.outstanding.load(std::memory_order_relaxed)));
    bool ok = u.probe_ok.load(std::memory_order_relaxed) && st != routing::circuit_state::open;
    sample(healthy, {{"upstream", name}}, ok ? 1 : 0);
    sample(saturated, {{"upstream", name}}, r_.engine_holds(u, now) ? 1 : 0);
    auto snap = u.pace->snapshot(now);
    if (snap.requests_limit > 0) sample(budget, {{"upstream", name}, {"kind", "requests"}}, std::max(0.0, snap.requests_available));
    if (snap.tokens_limit > 0) sample(budget, {{"upstream", name}, {"kind", "tokens"}}, std::max(0.0, snap.tokens_available));
    for (std::size_t k = 0; k < retry_reason_count; ++k)
      sample(retries, {{"upstream", name}, {"reason", std::string(to_string(static_cast<retry_reason>(k)))}},
             static_cast<double>(retries_[i][k].load(std::memory_order_relaxed)));
  }
  auto holds = family("sluice_upstream_holds_total", "requests held at the gateway before an attempt, by cause",
                      pm::MetricType::Counter);
  auto hold_s = family("sluice_upstream_hold_seconds_total", "time requests spent held at the gateway, by cause",
                       pm::MetricType::Counter);
  for (std::size_t k = 0; k < hold_reason_count; ++k) {
    std::string reason(to_string(static_cast<hold_reason>(k)));
    sample(holds, {{"reason", reason}}, static_cast<double>(holds_[k].load(std::memory_order_relaxed)));
    sample(hold_s, {{"reason", reason}}, static_cast<double>(hold_micros_[k].load(std::memory_order_relaxed)) / 1e6);
  }
  auto stripped = family("sluice_usage_chunks_stripped_total",
                         "usage chunks sluice asked upstreams for and removed from streams that did not ask",
                         pm::MetricType::Counter);
  sample(stripped, {}, static_cast<double>(usage_stripped_.load(std::memory_order_relaxed)));
  return {responses, circuit, opens, outstanding, healthy, saturated, budget, retries, holds, hold_s, stripped};
}

}  // namespace sluice::proxy
