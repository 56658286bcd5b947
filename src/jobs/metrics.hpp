// The background responses' metrics (docs/queue.md):
//   sluice_jobs_waiting                 jobs queued for a job slot in this process (the store's queue)
//   sluice_jobs_running                 jobs running in this process
//   sluice_jobs_worker_slots            worker-max-jobs
//   sluice_jobs_total{state}            jobs ended: completed, failed, cancelled, incomplete
//   sluice_jobs_refused_total{reason}   background requests refused: queue_full, store_full
//                                        (memory-response-bytes, or --queue redis redis-response-bytes)
//   sluice_responses_stored             responses held by the in-process store
//   sluice_response_store_bytes         their bytes (requests, objects, events)
//   sluice_responses_evicted_total      finished responses dropped early to make room
//   sluice_responses_expired_total      finished responses dropped after response-retention
//   sluice_response_followers           clients reading a stored response's events
//   sluice_recorded_streams_total{state} clients' own Responses streams recorded for resume, by how
//                                        they ended (cancelled: no one followed for orphan-timeout)
//   --queue redis (the queue is the fleet's):
//   sluice_queue_jobs_waiting           the fleet's queue length in Redis, read every second (the same
//                                        reading in every process: a pod's view takes it once)
//   sluice_jobs_claimed_total           jobs this worker claimed from a worker that died before starting them
//   sluice_jobs_lost_total              running jobs this process found abandoned (worker_lost)
//   sluice_jobs_heartbeats_total{outcome} lease renewals of this process's running jobs (every third
//                                        of worker-loss-timeout): ok, failed (Redis did not answer)
//   sluice_jobs_orphaned_total          foreground jobs stopped: no front read them for orphan-timeout
//   sluice_foreground_jobs_total{result} client requests a front relayed through the queue:
//                                        completed, failed, cancelled (the client left), queue_full,
//                                        queue_timeout, unavailable (Redis), lost (worker_lost, or
//                                        Redis lost the job)
//   sluice_queue_redis_errors_total{op} queue operations Redis did not answer: create, read, cancel,
//                                        take, append
//   sluice_queue_redis_bytes            bytes the fleet holds in Redis for waiting jobs and responses
//                                        as its ledger counts them (read every second; bound:
//                                        redis-response-bytes)
//   sluice_queue_redis_bytes_limit      redis-response-bytes
//   sluice_jobs_vanished_total{what}    a response (what=response) or a queued job (what=job) found
//                                        missing from Redis before its retention ended (evicted,
//                                        deleted, Redis restarted without its data)
// Register with obs::metrics_registry::add_collectable; any thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "jobs/response_store.hpp"
#include "observability/component_metrics.hpp"

namespace sluice::jobs {

class metrics final : public obs::component_metrics {
 public:
  explicit metrics(const memory_store& store);

  void job_started() noexcept { running_->Increment(); }
  void job_ended(status s) noexcept;
  void stream_recorded(status s) noexcept;
  void refused(store_refusal why) noexcept;
  void expired(std::size_t n) noexcept { expired_->Increment(static_cast<double>(n)); }
  // --queue redis.
  enum class redis_op : std::uint8_t { create, read, cancel, take, append };
  void redis_error(redis_op op) noexcept { redis_errors_[static_cast<std::size_t>(op)]->Increment(); }
  void claimed(std::size_t n) noexcept { claimed_->Increment(static_cast<double>(n)); }
  void lost(std::size_t n) noexcept { lost_->Increment(static_cast<double>(n)); }
  void heartbeat(bool ok) noexcept { heartbeats_[ok ? 0 : 1]->Increment(); }
  void orphaned() noexcept { orphaned_->Increment(); }
  enum class foreground_outcome : std::uint8_t { completed, failed, cancelled, queue_full, queue_timeout, unavailable, lost, store_full };
  static constexpr std::size_t foreground_outcome_count = 8;
  static std::string_view name_of(foreground_outcome o) noexcept {
    constexpr std::string_view names[] = {"completed", "failed", "cancelled", "queue_full", "queue_timeout", "unavailable", "lost", "store_full"};
    return names[static_cast<std::size_t>(o)];
  }
  void foreground(foreground_outcome o) noexcept { foreground_[static_cast<std::size_t>(o)]->Increment(); }
  // The fleet's queue length as last read from Redis (sluice_queue_jobs_waiting).
  void queue_length(std::uint64_t n) noexcept {
    queue_length_.store(static_cast<std::int64_t>(n), std::memory_order_relaxed);
  }
  // The fleet's ledger of bytes held in Redis (sluice_queue_redis_bytes).
  void redis_bytes(std::uint64_t n) noexcept { redis_bytes_.store(static_cast<std::int64_t>(n), std::memory_order_relaxed); }
  enum class vanished_kind : std::uint8_t { response, job };
  void vanished(vanished_kind k) noexcept { vanished_[static_cast<std::size_t>(k)]->Increment(); }
  prometheus::Gauge& followers() noexcept { return *followers_; }
  double running() const { return running_->Value(); }

 private:
  prometheus::Gauge* running_ = nullptr;
  prometheus::Gauge* followers_ = nullptr;
  prometheus::Counter* expired_ = nullptr;
  std::array<prometheus::Counter*, 6> ended_{};
  std::array<prometheus::Counter*, 6> recorded_{};
  prometheus::Counter* queue_full_ = nullptr;
  prometheus::Counter* store_full_ = nullptr;
  prometheus::Counter* claimed_ = nullptr;
  prometheus::Counter* lost_ = nullptr;
  std::array<prometheus::Counter*, 2> heartbeats_{};  // ok, failed
  prometheus::Counter* orphaned_ = nullptr;
  std::array<prometheus::Counter*, foreground_outcome_count> foreground_{};
  std::array<prometheus::Counter*, 5> redis_errors_{};
  std::array<prometheus::Counter*, 2> vanished_{};
  std::atomic<std::int64_t> queue_length_{-1};  // -1: not read (memory mode)
  std::atomic<std::int64_t> redis_bytes_{0};
};

}  // namespace sluice::jobs

namespace sluice::jobs {
// Drops the store's finished responses past their retention every `every`, counting them; runs
// until cancelled (a task of the gateway's background group).
task<void> retention_loop(memory_store& store, metrics& m, duration every);
}  // namespace sluice::jobs
