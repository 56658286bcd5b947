#include "redis/availability.hpp"

#include "observability/log.hpp"

namespace sluice::redis {

std::string_view to_string(shared_limit l) noexcept {
  return l == shared_limit::upstream ? "upstream" : "client_key";
}

availability::availability(failure_mode mode, std::string server) : mode_(mode), server_(std::move(server)) {}

void availability::answered() noexcept {
  if (!degraded_.load(std::memory_order_relaxed)) return;
  if (!degraded_.exchange(false, std::memory_order_acq_rel)) return;  // another thread logged it
  const auto since = std::chrono::steady_clock::time_point(
      std::chrono::nanoseconds(degraded_since_ns_.load(std::memory_order_relaxed)));
  const double lasted_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
  obs::log_info("shared limits recovered: redis decides again",
                {{"redis", std::string_view(server_)},
                 {"degraded_ms", lasted_ms},
                 {"decisions_without_redis", outage_fallbacks_.exchange(0, std::memory_order_relaxed)}});
}

void availability::failed(shared_limit l, outcome why) noexcept {
  fallbacks_[static_cast<std::size_t>(l)].fetch_add(1, std::memory_order_relaxed);
  outage_fallbacks_.fetch_add(1, std::memory_order_relaxed);
  if (degraded_.load(std::memory_order_relaxed) || degraded_.exchange(true, std::memory_order_acq_rel)) return;
  degraded_since_ns_.store(std::chrono::steady_clock::now().time_since_epoch().count(), std::memory_order_relaxed);
  obs::log_warn("shared limits degraded: redis cannot decide",
                {{"redis", std::string_view(server_)},
                 {"why", to_string(why)},
                 {"limit", to_string(l)},
                 {"failure_mode", to_string(mode_)}});
}

shared_metrics::shared_metrics(const availability& a, const lease_keeper& leases) {
  const auto* av = &a;
  const auto* lk = &leases;
  scraped("sluice_shared_limits_degraded", "1 while Redis cannot decide the shared limits (the failure mode applies)",
          {}, [av] { return av->degraded() ? 1.0 : 0.0; });
  for (auto l : {shared_limit::client_key, shared_limit::upstream}) {
    scraped("sluice_shared_limit_fallbacks_total", "Shared-limit decisions Redis could not make, by limit",
            {{"limit", std::string(to_string(l))}, {"mode", std::string(to_string(a.mode()))}},
            [av, l] { return static_cast<double>(av->fallbacks(l)); });
  }
  scraped("sluice_redis_leases_held", "Concurrency slots this replica holds in Redis", {},
          [lk] { return static_cast<double>(lk->held()); });
  scraped("sluice_redis_lease_renewals_total", "Lease renewal runs by outcome", {{"outcome", "ok"}},
          [lk] { return static_cast<double>(lk->renewals_ok()); });
  scraped("sluice_redis_lease_renewals_total", "Lease renewal runs by outcome", {{"outcome", "failed"}},
          [lk] { return static_cast<double>(lk->renewals_failed()); });
  scraped("sluice_redis_leases_lost_total", "Held concurrency slots Redis no longer had at a renewal", {},
          [lk] { return static_cast<double>(lk->lost()); });
}

}  // namespace sluice::redis
