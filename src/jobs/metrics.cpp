#include "jobs/metrics.hpp"

#include <algorithm>

namespace sluice::jobs {

metrics::metrics(const memory_store& store) {
  running_ = &gauge("sluice_jobs_running", "Background jobs running in this process.");
  followers_ = &gauge("sluice_response_followers", "Clients reading a stored response's events.");
  expired_ = &counter("sluice_responses_expired_total", "Finished responses dropped after response-retention.");
  auto& ended = counter_family("sluice_jobs_total", "Background jobs ended, by final state.");
  for (auto s : {status::completed, status::failed, status::cancelled, status::incomplete})
    ended_[static_cast<std::size_t>(s)] = &ended.Add({{"state", std::string(to_string(s))}});
  auto& recorded = counter_family("sluice_recorded_streams_total",
                                  "Clients' own Responses streams recorded for resume, by final state.");
  for (auto s : {status::completed, status::failed, status::cancelled, status::incomplete})
    recorded_[static_cast<std::size_t>(s)] = &recorded.Add({{"state", std::string(to_string(s))}});
  auto& refused = counter_family("sluice_jobs_refused_total", "Background requests refused, by reason.");
  queue_full_ = &refused.Add({{"reason", "queue_full"}});
  store_full_ = &refused.Add({{"reason", "store_full"}});
  gauge("sluice_jobs_worker_slots", "Background jobs this process runs at once (worker-max-jobs).")
      .Set(static_cast<double>(store.settings().worker_max_jobs));
  claimed_ = &counter("sluice_jobs_claimed_total",
                      "Jobs this worker claimed from a worker that died before starting them (--queue redis).");
  lost_ = &counter("sluice_jobs_lost_total", "Running jobs found abandoned by their worker and failed as worker_lost (--queue redis).");
  auto& beats = counter_family("sluice_jobs_heartbeats_total",
                               "Lease renewals of this process's running jobs, every third of worker-loss-timeout, by outcome (--queue redis).");
  heartbeats_ = {&beats.Add({{"outcome", "ok"}}), &beats.Add({{"outcome", "failed"}})};
  orphaned_ = &counter("sluice_jobs_orphaned_total",
                       "Foreground jobs this worker stopped because no front read them for orphan-timeout (--queue redis).");
  auto& fg = counter_family("sluice_foreground_jobs_total",
                            "Client requests a front relayed through the queue (--queue redis, --role front), by how they ended.");
  for (std::size_t k = 0; k < foreground_.size(); ++k)
    foreground_[k] = &fg.Add({{"result", std::string(name_of(static_cast<foreground_outcome>(k)))}});
  auto& errors = counter_family("sluice_queue_redis_errors_total", "Queue operations Redis did not answer (--queue redis).");
  std::size_t i = 0;
  for (const char* op : {"create", "read", "cancel", "take", "append"}) redis_errors_[i++] = &errors.Add({{"op", op}});
  auto& vanished = counter_family("sluice_jobs_vanished_total",
                                  "Responses or queued jobs found missing from Redis before their retention ended (--queue redis).");
  vanished_[0] = &vanished.Add({{"what", "response"}});
  vanished_[1] = &vanished.Add({{"what", "job"}});
  if (store.settings().queue == queue_backend::redis) {
    gauge("sluice_queue_redis_bytes_limit", "Bytes the fleet may hold in Redis for jobs and responses (redis-response-bytes).")
        .Set(static_cast<double>(store.settings().redis_response_bytes));
    scraped("sluice_queue_redis_bytes", "Bytes the fleet holds in Redis for waiting jobs and responses, as its ledger counts them.",
            {}, [this] { return static_cast<double>(redis_bytes_.load(std::memory_order_relaxed)); });
  }
  const memory_store* s = &store;
  scraped("sluice_jobs_waiting", "Background jobs queued for a job slot in this process's in-process queue.", {},
          [s] { return static_cast<double>(s->waiting()); });
  // The fleet's queue is one reading that every process takes, not a share of each: its own
  // family, so that a pod's merged view takes it once (max) where the local queues add up.
  if (store.settings().queue == queue_backend::redis)
    scraped("sluice_queue_jobs_waiting", "Background jobs waiting in the fleet's queue in Redis (read every second).",
            {}, [this] { return static_cast<double>(std::max<std::int64_t>(0, queue_length_.load(std::memory_order_relaxed))); });
  scraped("sluice_responses_stored", "Responses held by the in-process store.", {},
          [s] { return static_cast<double>(s->stored()); });
  scraped("sluice_response_store_bytes", "Bytes of the responses held by the in-process store.", {},
          [s] { return static_cast<double>(s->stored_bytes()); });
  scraped("sluice_responses_evicted_total", "Finished responses dropped before their retention to make room.", {},
          [s] { return static_cast<double>(s->evicted()); });
}

void metrics::job_ended(status s) noexcept {
  running_->Decrement();
  if (auto* c = ended_[static_cast<std::size_t>(s)]) c->Increment();
}

void metrics::stream_recorded(status s) noexcept {
  if (auto* c = recorded_[static_cast<std::size_t>(s)]) c->Increment();
}

void metrics::refused(store_refusal why) noexcept {
  if (why == store_refusal::queue_full) queue_full_->Increment();
  if (why == store_refusal::store_full) store_full_->Increment();
}

}  // namespace sluice::jobs

namespace sluice::jobs {

task<void> retention_loop(memory_store& store, metrics& m, duration every) {
  net::steady_timer timer(co_await net::this_coro::executor);
  for (;;) {
    timer.expires_after(every);
    error_code ec;
    co_await timer.async_wait(ec_out(ec));
    if (ec) co_return;
    if (auto n = store.sweep(runtime::steady::now())) m.expired(n);
  }
}

}  // namespace sluice::jobs
