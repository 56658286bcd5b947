// The background responses' metrics (docs/queue.md):
//   sluice_jobs_waiting                 jobs queued for a worker slot (scraped from the store)
//   sluice_jobs_running                 jobs running in this process
//   sluice_jobs_worker_slots            worker-max-jobs
//   sluice_jobs_total{state}            jobs ended: completed, failed, cancelled, incomplete
//   sluice_jobs_refused_total{reason}   background requests refused: queue_full, store_full
//   sluice_responses_stored             responses held by the in-process store
//   sluice_response_store_bytes         their bytes (requests, objects, events)
//   sluice_responses_evicted_total      finished responses dropped early to make room
//   sluice_responses_expired_total      finished responses dropped after response-retention
//   sluice_response_followers           clients reading a stored response's events
// Register with obs::metrics_registry::add_collectable; any thread.
#pragma once

#include <array>

#include "jobs/response_store.hpp"
#include "observability/component_metrics.hpp"

namespace sluice::jobs {

class metrics final : public obs::component_metrics {
 public:
  explicit metrics(const memory_store& store);

  void job_started() noexcept { running_->Increment(); }
  void job_ended(status s) noexcept;
  void refused(store_refusal why) noexcept;
  void expired(std::size_t n) noexcept { expired_->Increment(static_cast<double>(n)); }
  prometheus::Gauge& followers() noexcept { return *followers_; }
  double running() const { return running_->Value(); }

 private:
  prometheus::Gauge* running_ = nullptr;
  prometheus::Gauge* followers_ = nullptr;
  prometheus::Counter* expired_ = nullptr;
  std::array<prometheus::Counter*, 6> ended_{};
  prometheus::Counter* queue_full_ = nullptr;
  prometheus::Counter* store_full_ = nullptr;
};

}  // namespace sluice::jobs

namespace sluice::jobs {
// Drops the store's finished responses past their retention every `every`, counting them; runs
// until cancelled (a task of the gateway's background group).
task<void> retention_loop(memory_store& store, metrics& m, duration every);
}  // namespace sluice::jobs
