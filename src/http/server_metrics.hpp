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
  }
};

}  // namespace sluice::http
