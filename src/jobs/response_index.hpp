// pod_response_index: which worker process of a pod holds each stored response (docs/processes.md).
// With `--queue memory` a background response, or a recorded stream a client may resume, lives in
// the store of the worker that made it; a GET, a cancel or a resume that another worker accepts is
// handed to that worker (runtime::handover_mesh) when this index names it. Lives in the pod's
// shared segment: an open-addressing table of the ids' 64-bit hashes (a collision names a worker
// that answers 404, as for an unknown id) and the worker row of each, under one process-shared
// robust mutex. A worker adds and removes its own ids as its store does; the supervisor drops a
// dead worker's. Full (capacity / 2 entries, so probes stay short): further ids are not indexed,
// and reach their worker only by the accept queue's chance.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "runtime/robust_mutex.hpp"

namespace sluice::jobs {

class pod_response_index {
 public:
  static constexpr std::size_t slots = std::size_t{1} << 17;
  static constexpr std::size_t capacity = slots / 2;

  pod_response_index() = default;
  pod_response_index(const pod_response_index&) = delete;
  pod_response_index& operator=(const pod_response_index&) = delete;

  // Worker row `row` holds `id` now. False when the index is full (not indexed).
  bool add(std::string_view id, std::uint32_t row) noexcept;
  // Row `row` no longer holds `id` (an entry another row holds stays).
  void remove(std::string_view id, std::uint32_t row) noexcept;
  // The worker row holding `id`, if indexed.
  std::optional<std::uint32_t> holder(std::string_view id) noexcept;
  // Worker row `row`'s process has ended: its ids are gone with its store.
  void drop_row(std::uint32_t row) noexcept;
  std::size_t size() const noexcept { return size_.load(std::memory_order_relaxed); }

  static std::uint64_t hash(std::string_view id) noexcept;

 private:
  struct entry {
    std::uint64_t key = 0;  // 0: empty
    std::uint32_t row = 0;
  };
  class guard;
  // Takes every entry out and puts back those `keep` accepts (a repair after a process died
  // inside the lock, or a dead row's removal).
  template <class Keep>
  void rebuild_locked(Keep&& keep) noexcept;
  void insert_locked(std::uint64_t key, std::uint32_t row) noexcept;
  void erase_at_locked(std::size_t i) noexcept;

  runtime::robust_mutex mu_;
  std::atomic<std::size_t> size_{0};
  std::array<entry, slots> table_{};
};

}  // namespace sluice::jobs
