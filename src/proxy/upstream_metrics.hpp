// upstream_metrics: the per-upstream metrics (responses by status, circuit state, outstanding
// requests, health, engine saturation, paced budgets, retries, holds), read from the router at
// scrape time plus the counters the attempt loop bumps. A prometheus Collectable registered with the
// gateway's metrics_registry; labels are only the configured upstream names and fixed enums.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <vector>

#include <prometheus/collectable.h>

#include "observability/metrics.hpp"
#include "routing/router.hpp"

namespace sluice::proxy {

// Why an attempt was retried.
enum class retry_reason : std::uint8_t { connect, timeout, status_429, status_5xx, protocol };
inline constexpr std::size_t retry_reason_count = 5;
std::string_view to_string(retry_reason r) noexcept;

// Why a request was held at the gateway before an attempt.
enum class hold_reason : std::uint8_t { paced, engine, concurrency };
inline constexpr std::size_t hold_reason_count = 3;
std::string_view to_string(hold_reason r) noexcept;

class upstream_metrics final : public prometheus::Collectable {
 public:
  explicit upstream_metrics(routing::router& r);

  // One response from upstream i (status 0: no response, a transport failure).
  void responded(std::size_t upstream, int http_status) noexcept;
  void retried(std::size_t upstream, retry_reason why) noexcept;
  void held(hold_reason why, double seconds) noexcept;
  void usage_stripped() noexcept { usage_stripped_.fetch_add(1, std::memory_order_relaxed); }

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  routing::router& r_;
  std::unique_ptr<std::array<std::atomic<std::uint64_t>, retry_reason_count>[]> retries_;
  std::unique_ptr<std::array<std::atomic<std::uint64_t>, obs::upstream_status_slots>[]> responses_;
  std::array<std::atomic<std::uint64_t>, hold_reason_count> holds_{};
  std::array<std::atomic<std::uint64_t>, hold_reason_count> hold_micros_{};
  std::atomic<std::uint64_t> usage_stripped_{0};
};

}  // namespace sluice::proxy
