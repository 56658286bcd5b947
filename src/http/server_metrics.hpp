// server_metrics: the downstream server's own metrics, read from the counters every worker
// thread's server shares (server_shared) at scrape time. server_shared must outlive it.
#pragma once

#include "http/server.hpp"
#include "observability/component_metrics.hpp"

namespace sluice::http {

class server_metrics final : public obs::component_metrics {
 public:
  explicit server_metrics(const server_shared& s) {
    scraped("sluice_connections_active", "Open client connections.", {},
            [&s] { return static_cast<double>(s.open_connections.load(std::memory_order_relaxed)); });
    // --processes N (ADR 0016): a worker over its share of the pod's connections stops accepting.
    scraped("sluice_accept_share_pauses_total",
            "Times a worker process stopped accepting because it held more than its share of the pod's connections.", {},
            [&s] { return static_cast<double>(s.share_pauses.load(std::memory_order_relaxed)); });
    scraped("sluice_accept_share_overrides_total",
            "Connections a worker over its share accepted anyway: they waited with no other worker taking them.", {},
            [&s] { return static_cast<double>(s.share_overrides.load(std::memory_order_relaxed)); });
  }
};

}  // namespace sluice::http
