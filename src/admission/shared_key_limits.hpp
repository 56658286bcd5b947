// admission::shared_key_limits: the client keys' limits held by every replica together, through
// Redis (docs/scale-out.md). Each admission is one script run (`key_admit`): it drops the key's
// expired concurrency slots, checks max_streams, rpm and tpm against what the whole fleet has used,
// and either charges all three (a slot in the key's sorted set under a lease, one request, the
// request's token estimate) or nothing. Each end is at most one more (`key_settle`): the slot is
// given back and the tokens settled to what the request used (a refund when it used less). Keys
// with no limit never touch Redis. Time in the scripts is Redis's TIME.
//
// When Redis cannot decide (down, slower than its deadline, out of in-flight slots) the failure
// mode applies: `local` decides with this replica's own share of each limit (the limits divided by
// redis-fallback-replicas), `closed` refuses with a 503 (rate_limit_kind::unavailable). No switch
// hands out a fresh budget (fallback_carry): deciding alone starts from the fleet's levels at
// Redis's last answer, the streams this replica holds either way count on both sides, and coming
// back Redis learns what was admitted alone (key_observe) before it decides again.
//
// Threading: acquire() on a gateway worker thread (it uses that thread's Redis connection); permits
// may end on any thread. Lifetime: outlives every permit, and the worker pool's last run (its
// settles are tasks of its own group).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "admission/client_keys.hpp"
#include "admission/fallback_carry.hpp"
#include "redis/availability.hpp"
#include "redis/buckets.hpp"
#include "redis/client.hpp"
#include "redis/leases.hpp"
#include "redis/options.hpp"
#include "runtime/task_group.hpp"

namespace sluice::admission {

// The Redis keys of one client key's buckets (redis/buckets.hpp): "<prefix>{k:<name>}:b" (the
// hash) and "<prefix>{k:<name>}:s" (the sorted set of its slots).
std::string key_bucket_key(std::string_view prefix, std::string_view name);
std::string key_slots_key(std::string_view prefix, std::string_view name);

class shared_key_limits final : public key_limits {
 public:
  // `keys`: the keys file as loaded. The availability and the lease keeper are the process's (the
  // upstream budgets share them) and must outlive this.
  shared_key_limits(client_keys keys, const redis::options& o, redis::availability& av, redis::lease_keeper& leases);
  ~shared_key_limits() override;

  // The scripts to register with the Redis client, in order: key_admit, key_settle, key_observe.
  static std::vector<redis::script> scripts();
  // The client whose per-thread connections run them, and where the first of them is in its list.
  void attach(redis::client& c, std::size_t first_script);
  // After the worker pool's last run: permits that end later tell Redis nothing (their slots free
  // with their leases). Call from the controlling thread once the pool is joined.
  void detach() noexcept { client_ = nullptr; }

  result<key_handle> authenticate_header(std::string_view authorization) const override {
    return keys_.authenticate_header(authorization);
  }
  // A key without limits is decided here at once; every other one needs acquire().
  std::optional<key_decision> try_acquire_now(const key_handle& key, std::uint64_t tokens) override;
  task<key_decision> acquire(const key_handle& key, std::uint64_t tokens) override;

  const client_keys& keys() const noexcept { return keys_; }
  // Settles still in flight (their tasks).
  std::size_t settles_in_flight() const noexcept { return settles_.size(); }

 private:
  void release(detail::key_entry& e, const permit_usage& u) noexcept override;
  key_decision fallback(std::size_t index, std::uint64_t tokens, redis::outcome why);
  // Back from deciding alone: Redis's levels for the key lowered to what the fleet may have left
  // (key_observe). Why not, when Redis did not answer.
  task<std::optional<redis::outcome>> come_back(redis::connection& c, std::size_t index);
  void remember(std::size_t index, const redis::bucket_reply& got);
  // The key_settle run for one ended permit (or a slot an unanswered admission may have taken).
  task<void> settle(std::shared_ptr<redis::connection> c, std::size_t index, std::string member, std::int64_t delta);
  void spawn_settle(std::size_t index, std::string member, std::int64_t delta) noexcept;

  client_keys keys_;      // authentication, the configured limits
  client_keys fallback_;  // this replica's share, decided alone while Redis cannot
  redis::availability& availability_;
  redis::lease_keeper& leases_;
  redis::client* client_ = nullptr;
  std::size_t admit_ = 0, settle_ = 0, observe_ = 0;
  std::uint64_t replicas_;  // redis-fallback-replicas
  struct carried {
    std::mutex mu;
    fallback_carry carry;
    carried(std::uint64_t rpm, std::uint64_t tpm) : carry(rpm, tpm) {}
  };
  std::vector<std::unique_ptr<carried>> carried_;  // per key index
  std::vector<std::string> buckets_, slots_;  // per key index
  runtime::task_group settles_;
};

}  // namespace sluice::admission
