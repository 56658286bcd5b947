// redis_worker: the worker side of --queue redis (docs/queue.md, ADR 0010). A pull loop takes jobs
// from the fleet's queue only into free slots (XREADGROUP with COUNT no larger than the free slots,
// never more), and claims jobs a dead worker took but never started (XAUTOCLAIM after a lease).
// Each job runs on one pool thread, through that thread's pipeline (run_job over job_runner: the same
// attempt loop and relay as a client's request) into a local record, and a mirror on the same
// thread copies the record's events and object into Redis as they come; a client's own recorded
// Responses stream is mirrored the same way (on fronts too). An upkeep loop stops the jobs clients
// cancelled (within 50 ms) and, every third of worker-loss-timeout, renews the leases of what this
// process writes (its heartbeat) and fails the jobs of processes whose leases lapsed (worker_lost).
//
// Threading: the loops run on thread 0; a job and its mirror on the thread it was given; the table
// of running jobs takes one short mutex. Lifetime: outlives the tasks it spawned (the gateway
// stops its pool first).
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "jobs/credential_seal.hpp"
#include "jobs/metrics.hpp"
#include "jobs/reap_gate.hpp"
#include "jobs/redis_notifier.hpp"
#include "jobs/redis_outage.hpp"
#include "jobs/redis_queue.hpp"
#include "jobs/wakeup.hpp"
#include "proxy/responses/job_runner.hpp"
#include "proxy/services.hpp"
#include "redis/client.hpp"
#include "runtime/task_group.hpp"
#include "runtime/loop_pool.hpp"

namespace sluice::proxy {

class redis_worker {
 public:
  // The runner of thread `thread`'s jobs (its pipeline).
  using pipeline_of = std::function<job_runner&(std::size_t thread)>;

  // `notifier` (may be null): wakes the pull loop when a job is queued, instead of its poll.
  // `seal` (may be null: no queue secret): opens a job's sealed client credential.
  redis_worker(jobs::redis_queue& queue, redis::client& redis, runtime::loop_pool& pool, pipeline_of pipelines,
               jobs::metrics& metrics, const drain_state& drain, jobs::redis_notifier* notifier = nullptr,
               const jobs::credential_seal* seal = nullptr);
  redis_worker(const redis_worker&) = delete;
  redis_worker& operator=(const redis_worker&) = delete;

  // Spawns the queue-length sampler and the upkeep loop into `group` (cancelled at stop).
  void start(runtime::task_group& group);
  // Spawns the pull loop (role worker or both): once the start-up checks of Redis are done, so that
  // no job is taken by a process that then does not start.
  void start_pulling(runtime::task_group& group);

  std::size_t running() const noexcept { return busy_.load(std::memory_order_relaxed); }

  // A client's own Responses stream that this process records (recording_downstream): stored in
  // Redis too, under this process's lease, and mirrored there as it runs, so that any front can
  // resume it; a follower on another front keeps it from orphan-timeout. Call on a pool thread.
  void mirror_recorded(std::shared_ptr<jobs::response_record> rec);

 private:
  task<void> pull_loop(runtime::task_group& group);
  task<void> upkeep_loop();
  // Renews this process's job leases, then (when `gate` allows) fails others' lapsed ones.
  task<void> heartbeat(redis::connection& c, jobs::reap_gate& gate);
  task<void> sample_loop();
  task<void> run_one(jobs::queued_job job, std::size_t thread);
  task<void> run_recorded(std::shared_ptr<jobs::response_record> rec);
  // Copies the record into Redis until it is final and all of it is there.
  task<void> mirror(std::shared_ptr<jobs::response_record> rec);
  // What a mirror copied so far.
  struct mirror_cursor {
    std::int64_t last = -1;  // the last event in Redis
    std::string written;     // the object in Redis
    bool foreground = false;
    bool upstream_id_noted = false;
  };
  // One batch (and the object, when `changed`; its status, when `final_state`) into Redis: whether
  // the response is still this process's to write; redis_unavailable() when Redis did not answer.
  task<result<bool>> copy_batch(jobs::response_record& rec, mirror_cursor& cur, jobs::event_batch& batch,
                                std::optional<jobs::status> final_state, const std::string& object, bool changed);
  // A follower read the response `followed_ms_ago` (through any front); `may_orphan`: a foreground
  // job not final, stopped when its front stopped reading for orphan-timeout.
  void heard_followers(jobs::response_record& rec, std::int64_t followed_ms_ago, bool may_orphan, const std::string& object);
  // One failed copy: false once Redis stayed away a whole lease (the job is then stopped).
  bool ride_out(jobs::response_record& rec, jobs::redis_outage& outage, const std::string& object);
  // The job's sealed credential back among its headers (in this process only); false when it
  // does not open here (no queue secret, or another one than the front's).
  bool unseal(jobs::stored_response& job) const;
  // Stops running job `id` (a client cancelled it, or it is no longer this worker's).
  void stop_job(const std::string& id);

  jobs::redis_queue& queue_;
  redis::client& redis_;
  runtime::loop_pool& pool_;
  pipeline_of pipelines_;
  jobs::metrics& metrics_;
  const drain_state& drain_;
  jobs::redis_notifier* notifier_;
  const jobs::credential_seal* seal_;
  runtime::task_group* group_ = nullptr;  // set by start()

  std::atomic<std::size_t> busy_{0};  // slots taken (a job loading, running or being mirrored)
  std::size_t next_thread_ = 0;       // the pull loop's round-robin
  jobs::wakeup::handle slot_freed_;   // wakes the pull loop when a slot frees
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<jobs::response_record>> running_;
};

}  // namespace sluice::proxy
