// availability: whether Redis decides the shared limits right now. Every shared decision reports
// here whether Redis made it; the first failure after a success turns the state degraded (one warn
// line, the gauge goes to 1) and the first success after failures recovers it (one info line with
// how long it lasted and how many decisions were made without Redis). While degraded each decision
// still asks Redis first, so recovery is automatic and immediate: a Redis that is down fails a
// command at once (disconnected), a hung one within the command deadline until the connection is
// dropped as stalled. What a decision does without Redis is the failure mode's (options.hpp).
// Thread-safe (atomics); one per process.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "observability/component_metrics.hpp"
#include "redis/connection_types.hpp"
#include "redis/leases.hpp"
#include "redis/options.hpp"

namespace sluice::redis {

// Which shared limit a decision was for (a metric label).
enum class shared_limit : std::uint8_t { client_key, upstream };
inline constexpr std::size_t shared_limit_count = 2;
std::string_view to_string(shared_limit l) noexcept;

class availability {
 public:
  availability(failure_mode mode, std::string server);

  failure_mode mode() const noexcept { return mode_; }
  bool degraded() const noexcept { return degraded_.load(std::memory_order_relaxed); }

  // Redis made a decision.
  void answered() noexcept;
  // Redis could not make one (`why`); the caller applies the failure mode.
  void failed(shared_limit l, outcome why) noexcept;

  std::uint64_t fallbacks(shared_limit l) const noexcept {
    return fallbacks_[static_cast<std::size_t>(l)].load(std::memory_order_relaxed);
  }

 private:
  const failure_mode mode_;
  const std::string server_;  // redis://host:port/db, for the log lines (no credentials)
  std::atomic<bool> degraded_{false};
  std::atomic<std::int64_t> degraded_since_ns_{0};
  std::atomic<std::uint64_t> outage_fallbacks_{0};
  std::array<std::atomic<std::uint64_t>, shared_limit_count> fallbacks_{};
};

// The shared limits' metrics, read from the availability and the lease keeper at scrape time:
//   sluice_shared_limits_degraded                 1 while Redis cannot decide
//   sluice_shared_limit_fallbacks_total{limit,mode} decisions made without Redis
//   sluice_redis_leases_held                      concurrency slots this replica holds in Redis
//   sluice_redis_lease_renewals_total{outcome}    renewal runs (ok, failed)
//   sluice_redis_leases_lost_total                held slots Redis no longer had at a renewal
class shared_metrics final : public obs::component_metrics {
 public:
  // Both must outlive this struct's registration.
  shared_metrics(const availability& a, const lease_keeper& leases);
};

}  // namespace sluice::redis
