// request_metrics: the pipeline's own metrics, written once per finished request by finish():
// requests by route and outcome, their duration, the gateway's overhead by stage, tokens, and
// refusals by reason (the acceptors' max_connections refusals are read from their shared counters
// at scrape time). Built by the composition root; every member is lock-free and thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "http/server.hpp"
#include "observability/component_metrics.hpp"
#include "observability/metrics.hpp"

namespace sluice::proxy {

class request_metrics final : public obs::component_metrics {
 public:
  // `connections`: the acceptors' counters; null when there are none (tests).
  explicit request_metrics(const http::server_shared* connections = nullptr);

  prometheus::Counter& requests_total(obs::route r, obs::outcome o) noexcept {
    return *requests_[obs::index_of(r)][obs::index_of(o)];
  }
  obs::histogram& request_duration_seconds(obs::route r) noexcept { return duration_.at(obs::index_of(r)); }
  obs::histogram& overhead_seconds(obs::stage s) noexcept { return overhead_.at(obs::index_of(s)); }
  prometheus::Counter& tokens_total(obs::direction d) noexcept { return *tokens_[obs::index_of(d)]; }
  void rejected(obs::reject_reason r) noexcept {
    rejections_[obs::index_of(r)].fetch_add(1, std::memory_order_relaxed);
  }
  std::uint64_t rejections(obs::reject_reason r) const noexcept;

 private:
  const http::server_shared* connections_;
  obs::histogram_family& duration_;
  obs::histogram_family& overhead_;
  std::array<std::array<prometheus::Counter*, obs::all_outcomes.size()>, obs::all_routes.size()> requests_{};
  std::array<prometheus::Counter*, obs::all_directions.size()> tokens_{};
  std::array<std::atomic<std::uint64_t>, obs::all_reject_reasons.size()> rejections_{};
};

}  // namespace sluice::proxy
