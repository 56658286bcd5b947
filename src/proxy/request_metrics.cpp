#include "proxy/request_metrics.hpp"

namespace sluice::proxy {

request_metrics::request_metrics(const http::server_shared* connections)
    : connections_(connections),
      duration_(histograms("sluice_request_duration_seconds",
                           "Time from the request head arriving to the last response byte written, by route.",
                           obs::latency_buckets, "route", obs::label_values(obs::all_routes))),
      overhead_(histograms("sluice_overhead_seconds",
                           "Time the gateway itself spent on a request, by stage (not waiting on the upstream).",
                           obs::overhead_buckets, "stage", obs::label_values(obs::all_stages))) {
  auto& requests = counter_family("sluice_requests_total", "Requests finished, by route and outcome.");
  for (auto r : obs::all_routes)
    for (auto o : obs::all_outcomes)
      requests_[obs::index_of(r)][obs::index_of(o)] =
          &requests.Add({{"route", std::string(obs::to_string(r))}, {"outcome", std::string(obs::to_string(o))}});
  auto& tokens = counter_family("sluice_tokens_total",
                                "Tokens accounted, prompt and completion, as reported by upstreams or counted in relay.");
  for (auto d : obs::all_directions) tokens_[obs::index_of(d)] = &tokens.Add({{"direction", std::string(obs::to_string(d))}});
  for (auto r : obs::all_reject_reasons)
    scraped("sluice_rejections_total", "Requests refused before reaching an upstream, by reason.",
            {{"reason", std::string(obs::to_string(r))}}, [this, r] { return static_cast<double>(rejections(r)); });
}

std::uint64_t request_metrics::rejections(obs::reject_reason r) const noexcept {
  std::uint64_t n = rejections_[obs::index_of(r)].load(std::memory_order_relaxed);
  // Connections refused at max-connections are counted by the acceptors, which have no request.
  if (r == obs::reject_reason::max_connections && connections_)
    n += connections_->refused_connections.load(std::memory_order_relaxed);
  return n;
}

}  // namespace sluice::proxy
