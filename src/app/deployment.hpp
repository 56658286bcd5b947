// deployment: what shape of deployment one `sluice serve` process is part of (Redis or not, the
// queue's backend, the process's queue role, a supervisor's pod of processes), decided once from
// its options before anything is built. The gateway's steps and `sluice serve` consult this one
// value instead of testing the options again each.
#pragma once

#include <cstddef>

#include "app/pod.hpp"
#include "app/serve_options.hpp"
#include "jobs/options.hpp"

namespace sluice::app {

// Where the client keys' limits (keys-file) are held.
enum class key_limits_place : std::uint8_t {
  none,    // no keys-file
  local,   // this process's own counters
  pod,     // a worker of --processes N without --redis: the pod's shared segment
  shared,  // --redis: the fleet's, through Redis
};

struct deployment {
  // --redis: the fleet's limits (client keys, upstream budgets, leases) go through Redis.
  bool shared_limits = false;
  // --queue redis (with --redis): jobs and stored responses go through Redis Streams; otherwise the
  // in-process store and job queue.
  bool redis_queue = false;
  jobs::process_role role = jobs::process_role::both;  // --role
  // `processes` as a number (1 when it is not one: validation has said so already).
  std::size_t processes = 1;
  // This process is one worker of a supervisor's pod (--processes N), with its row.
  bool pod_worker = false;
  // A pod worker with the in-process store and the pod's handover mesh: its responses are indexed
  // for the pod, and a request for one another worker holds is handed to that worker.
  bool pod_handover = false;
  key_limits_place keys = key_limits_place::none;

  // A supervisor and worker processes (`sluice serve` in the process that reads the flags).
  bool supervised() const noexcept { return processes > 1; }
  bool runs_jobs() const noexcept { return role != jobs::process_role::front; }

  // `pod`: this process's place in a pod (empty outside one).
  static deployment of(const serve_options& o, const pod_link& pod = {}) {
    deployment d;
    d.shared_limits = o.redis.enabled();
    d.redis_queue = d.shared_limits && o.jobs.queue == jobs::queue_backend::redis;
    d.role = o.jobs.role;
    if (auto n = o.process_count(); n) d.processes = *n;
    d.pod_worker = static_cast<bool>(pod);
    d.pod_handover = d.pod_worker && pod.mesh != nullptr && !d.redis_queue;
    d.keys = d.place_of_keys(!o.admission.keys_file.empty());
    return d;
  }

 private:
  key_limits_place place_of_keys(bool keys_file) const noexcept {
    if (!keys_file) return key_limits_place::none;
    if (shared_limits) return key_limits_place::shared;
    if (pod_worker) return key_limits_place::pod;
    return key_limits_place::local;
  }
};

}  // namespace sluice::app
