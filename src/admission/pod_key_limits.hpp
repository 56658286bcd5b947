// admission::pod_key_limits: the client keys' limits held by every worker process of `sluice serve
// --processes N` together (docs/processes.md), without Redis: each key with a limit has a row in
// the pod's shared segment (pod_keys, named by the key's SHA-256), holding its streams in use (the
// pod's total and each worker process's part) and its rpm and tpm buckets. A decision is the local
// limits' decision (decide_on), made on that row under its process-shared lock. Workers of every
// generation that know the key share its row, so a reload neither resets a key's rates nor lets
// its old streams go uncounted; the newest generation's rpm and tpm set the buckets' limits, each
// generation holds the key's streams to its own max_streams.
//
// A worker process that dies leaves its streams counted in its part of each row; the supervisor
// gives them back (pod_keys::detach_worker). With --redis the limits are the fleet's
// (shared_key_limits) and this is not used.
//
// Threading: thread-safe. Lifetime: the table (shared memory) outlives this; this outlives every
// permit it gave.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "admission/client_keys.hpp"
#include "core/token_bucket.hpp"
#include "runtime/pod_table.hpp"

namespace sluice::admission {

// One key's counters for the pod.
struct pod_key_row {
  static constexpr std::size_t workers = runtime::pod_worker_rows;

  std::uint64_t in_use = 0;                  // the key's streams in the pod: the sum of held
  std::array<std::uint32_t, workers> held{};  // by worker row
  std::optional<token_bucket> requests;       // rpm (absent: no rpm limit)
  std::optional<token_bucket> tokens;         // tpm (absent: no tpm limit)

  // A worker died inside the lock, perhaps between its part and the total.
  void repair() noexcept;
  // Worker row w's process has ended: its streams go back.
  void release_worker(std::size_t w) noexcept;
};

// Keys with a limit in every generation alive at once; a generation that would need more is refused
// at its start (use --redis for more).
inline constexpr std::size_t pod_key_rows = 4096;
using pod_keys = runtime::pod_table<pod_key_row, pod_key_rows>;

class pod_key_limits final : public key_limits {
 public:
  using now_fn = client_keys::now_fn;

  // `keys`: this generation's keys file as loaded. Attaches worker row `worker` of `generation` to
  // a row of `table` for every key with a limit; an error when the table is full or `worker` is not
  // a worker row (runtime::is_pod_worker_row). Moved only before its first permit.
  static result<pod_key_limits> attach(client_keys keys, pod_keys& table, std::size_t worker,
                                       std::uint32_t generation, now_fn now = {});

  result<key_handle> authenticate_header(std::string_view authorization) const override {
    return keys_.authenticate_header(authorization);
  }
  std::optional<key_decision> try_acquire_now(const key_handle& key, std::uint64_t tokens) override {
    return decide(key, tokens);
  }
  task<key_decision> acquire(const key_handle& key, std::uint64_t tokens) override;
  key_decision decide(const key_handle& key, std::uint64_t tokens);

  const client_keys& keys() const noexcept { return keys_; }
  // Keys of this generation with a row in the pod's table.
  std::size_t shared_keys() const noexcept;

 private:
  pod_key_limits(client_keys keys, std::size_t worker, now_fn now);
  void release(detail::key_entry& e, const permit_usage& u) noexcept override;

  client_keys keys_;
  std::size_t worker_;
  now_fn now_;
  std::vector<pod_keys::row*> rows_;  // per key index; null: a key without limits
};

}  // namespace sluice::admission
