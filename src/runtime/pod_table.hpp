// pod_table<Payload, N>: N rows of shared state in a pod's shared segment (app/pod.hpp), each
// named by a 32-byte identity (a client key's SHA-256, an upstream's) and used by the worker
// processes that attached to it. Worker processes of every generation that name the same identity
// share the row, so a limit it carries holds for the whole pod and across a reload.
//
// A row's payload is read and changed under the row's own process-shared robust mutex (locked(),
// guard); a process killed inside leaves it to the next locker, which calls Payload::repair()
// first. Rows are found and given out under the table's mutex: attach() by a worker at its start,
// detach_worker() by the supervisor once the worker has ended, which also calls
// Payload::release_worker(w) (what that worker held goes back to the pod). A row no worker uses is
// free for another identity.
//
// Payload: trivially destructible, address-free (no pointers), default-constructible, with
// `void repair() noexcept` and `void release_worker(std::size_t w) noexcept`.
// Lives in shared memory: constructed once before the first fork, never destroyed.
#pragma once

#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <utility>

#include "core/error.hpp"
#include "runtime/pod_shape.hpp"
#include "runtime/robust_mutex.hpp"

namespace sluice::runtime {

using row_identity = std::array<unsigned char, 32>;
// The SHA-256 of `text`: a row's identity for a name.
row_identity identity_of(std::string_view text);

// Why a worker got no row of a table of `rows`: `w` is not a worker row, or every row is taken by
// `what` ("upstreams", "keys with limits") across the generations alive; `advice` ends the message.
// The error a worker's start returns (the gateway's assembly, never an exception).
error pod_rows_error(std::size_t w, std::size_t rows, std::string_view what, std::string_view advice = {});

template <class Payload, std::size_t N>
class pod_table {
 public:
  // Worker rows of the pod (runtime::pod_worker_rows): one bit each in a row's users.
  static constexpr std::size_t max_workers = pod_worker_rows;
  static constexpr std::size_t capacity = N;

  struct row {
    robust_mutex mu;
    row_identity id{};
    std::atomic<std::uint64_t> users{0};  // bit w: worker row w attached; 0: a free row
    std::uint32_t generation = 0;         // the newest generation that attached (under the table's mutex)
    Payload data;
  };

  // Holds a row's lock; its payload may be read and changed meanwhile.
  class guard {
   public:
    explicit guard(row& r) : r_(r) {
      if (r_.mu.lock()) r_.data.repair();
    }
    ~guard() { r_.mu.unlock(); }
    guard(const guard&) = delete;
    guard& operator=(const guard&) = delete;
    Payload* operator->() const noexcept { return &r_.data; }
    Payload& operator*() const noexcept { return r_.data; }

   private:
    row& r_;
  };

  pod_table() = default;
  pod_table(const pod_table&) = delete;
  pod_table& operator=(const pod_table&) = delete;

  // Worker `w` of `generation` uses the row named `id`: the one already there, or a free one.
  // `fresh(payload)` runs for a row just given out, `newer(payload)` for one a lower generation set
  // up (a reload changed the config); both under the row's lock. Null when every row is taken.
  // `w` must be a worker row (is_pod_worker_row: the callers refuse one that is not).
  template <class Fresh, class Newer>
  row* attach(const row_identity& id, std::size_t w, std::uint32_t generation, Fresh&& fresh, Newer&& newer) {
    if (!is_pod_worker_row(w)) return nullptr;
    table_lock lk(*this);
    row* free_row = nullptr;
    for (auto& r : rows_) {
      const std::uint64_t users = r.users.load(std::memory_order_acquire);
      if (users == 0) {
        if (free_row == nullptr) free_row = &r;
        continue;
      }
      if (r.id != id) continue;
      if (generation > r.generation) {
        guard g(r);
        newer(*g);
        r.generation = generation;
      }
      r.users.fetch_or(bit(w), std::memory_order_acq_rel);
      return &r;
    }
    if (free_row == nullptr) return nullptr;
    {
      guard g(*free_row);
      *g = Payload{};
      fresh(*g);
    }
    free_row->id = id;
    free_row->generation = generation;
    free_row->users.store(bit(w), std::memory_order_release);
    return free_row;
  }

  // attach(), or why it gave no row (pod_rows_error, naming the rows `what`).
  template <class Fresh, class Newer>
  result<row*> attach_or_error(const row_identity& id, std::size_t w, std::uint32_t generation, Fresh&& fresh,
                               Newer&& newer, std::string_view what, std::string_view advice = {}) {
    row* r = attach(id, w, generation, std::forward<Fresh>(fresh), std::forward<Newer>(newer));
    if (r == nullptr) return pod_rows_error(w, N, what, advice);
    return r;
  }

  // The supervisor, once worker row `w`'s process has ended: what it held goes back, and rows
  // nobody uses any more are free.
  void detach_worker(std::size_t w) noexcept {
    if (!is_pod_worker_row(w)) return;  // never attached
    table_lock lk(*this);
    for (auto& r : rows_) {
      if ((r.users.load(std::memory_order_acquire) & bit(w)) == 0) continue;
      {
        guard g(r);
        g->release_worker(w);
      }
      r.users.fetch_and(~bit(w), std::memory_order_acq_rel);
    }
  }

  // Rows in use now.
  std::size_t used() const noexcept {
    std::size_t n = 0;
    for (const auto& r : rows_) n += r.users.load(std::memory_order_relaxed) != 0 ? 1 : 0;
    return n;
  }

 private:
  // `w` is a worker row: attach() and detach_worker() check it first.
  static std::uint64_t bit(std::size_t w) noexcept { return std::uint64_t{1} << w; }
  // The table's mutex guards which row has which identity; a process that died inside it left at
  // most its own bit set in one row, which detach_worker() clears.
  struct table_lock {
    explicit table_lock(pod_table& t) : t_(t) { t_.mu_.lock(); }
    ~table_lock() { t_.mu_.unlock(); }
    pod_table& t_;
  };

  robust_mutex mu_;
  std::array<row, N> rows_;
};

}  // namespace sluice::runtime
