// lease_keeper: the concurrency slots this replica holds in Redis. A slot is a member of a sorted
// set (one set per limited bucket: a client key's streams, an upstream's concurrency) whose score is
// the time, in Redis's own clock, after which the slot counts as abandoned. The admission scripts
// add a member and drop the expired ones before counting; this keeper remembers which members are
// this replica's and renews them all every lease/3, one script run per set, all pipelined in one
// write: a replica killed with `kill -9` stops renewing, so its slots free within one lease. A slot
// Redis lost while its stream still runs (Redis restarted, or a partition longer than the lease)
// is counted and logged, not put back: a renewal cannot tell it from one released meanwhile.
//
// Threading: hold()/drop() from any thread (one short mutex); run() on one thread (the connection's).
// Lifetime: outlives run() and every holder.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "core/units.hpp"
#include "redis/connection.hpp"
#include "redis/script.hpp"
#include "runtime/asio.hpp"

namespace sluice::redis {

class lease_keeper {
 public:
  // `replica` names this process in every member it writes (unique per process start).
  lease_keeper(std::string replica, duration lease);
  lease_keeper(const lease_keeper&) = delete;
  lease_keeper& operator=(const lease_keeper&) = delete;

  // A fresh replica name: 16 random hex digits.
  static std::string random_replica_name();
  // The renewal script (KEYS[1] a set; ARGV[1] the lease in ms, then members): register it with the
  // client's scripts and tell the keeper its index with run().
  static script renew_script();

  const std::string& replica() const noexcept { return replica_; }
  duration lease() const noexcept { return lease_; }
  long long lease_ms() const noexcept;

  // A new slot id and its member name in a set ("<replica>:<id>").
  std::uint64_t next_id() noexcept { return next_.fetch_add(1, std::memory_order_relaxed); }
  std::string member(std::uint64_t id) const;

  // This replica holds slot `id` in `set` (after the admission script added it) / no longer does.
  void hold(const std::string& set, std::uint64_t id);
  void drop(const std::string& set, std::uint64_t id);
  std::size_t held() const;

  // Renews every held slot each lease/3 on `c` (script `renew_index`), until cancelled. Each set's
  // renewal is its own script run, spawned into `runs` so that they go out in one write.
  task<void> run(connection& c, std::size_t renew_index, runtime::task_group& runs);
  // One round of renewals now (run() calls it; tests call it directly). Returns the runs spawned.
  std::size_t renew_once(connection& c, std::size_t renew_index, runtime::task_group& runs);

  // Counters for /metrics.
  std::uint64_t renewals_ok() const noexcept { return renew_ok_.load(std::memory_order_relaxed); }
  std::uint64_t renewals_failed() const noexcept { return renew_failed_.load(std::memory_order_relaxed); }
  std::uint64_t lost() const noexcept { return lost_.load(std::memory_order_relaxed); }

 private:
  task<void> renew(std::shared_ptr<connection> c, std::size_t index, std::string set, std::vector<std::string> args);

  const std::string replica_;
  const duration lease_;
  std::atomic<std::uint64_t> next_{1};
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::unordered_set<std::uint64_t>> held_;  // set -> slot ids
  std::size_t count_ = 0;                                                     // under mu_
  std::atomic<std::uint64_t> renew_ok_{0}, renew_failed_{0}, lost_{0};
};

}  // namespace sluice::redis
