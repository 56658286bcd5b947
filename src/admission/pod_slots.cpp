#include "admission/pod_slots.hpp"


namespace sluice::admission {

// Holds the pod's mutex. A lock whose owner died inside it (EOWNERDEAD: a worker killed between
// two writes) finds the totals possibly a step ahead of the rows: the rows are the truth (the
// supervisor gives back exactly what a dead row holds), so the totals are summed from them again.
class pod_slots::guard {
 public:
  explicit guard(pod_slots& s) noexcept : s_(s) {
    if (s_.mu_.lock()) {
      std::uint64_t held = 0, queued = 0;
      for (const auto& r : s_.row_) {
        held += r.held.load(std::memory_order_relaxed);
        queued += r.queued.load(std::memory_order_relaxed);
      }
      s_.held_.store(held, std::memory_order_relaxed);
      s_.queued_.store(queued, std::memory_order_relaxed);
      s_.repairs_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  ~guard() { s_.mu_.unlock(); }
  guard(const guard&) = delete;
  guard& operator=(const guard&) = delete;

 private:
  pod_slots& s_;
};

pod_slots::pod_slots() = default;

bool pod_slots::try_take(std::size_t r, std::uint64_t max) noexcept {
  guard g(*this);
  if (held_.load(std::memory_order_relaxed) >= max) return false;
  held_.fetch_add(1, std::memory_order_relaxed);
  row_[r].held.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void pod_slots::give_back(std::size_t r) noexcept {
  {
    guard g(*this);
    if (row_[r].held.load(std::memory_order_relaxed) == 0) return;  // already given back with its row
    row_[r].held.fetch_sub(1, std::memory_order_relaxed);
    held_.fetch_sub(1, std::memory_order_relaxed);
  }
  releases_.fetch_add(1, std::memory_order_release);
}

bool pod_slots::try_queue(std::size_t r, std::uint64_t depth) noexcept {
  guard g(*this);
  if (queued_.load(std::memory_order_relaxed) >= depth) return false;
  queued_.fetch_add(1, std::memory_order_relaxed);
  row_[r].queued.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void pod_slots::unqueue(std::size_t r) noexcept {
  guard g(*this);
  if (row_[r].queued.load(std::memory_order_relaxed) == 0) return;
  row_[r].queued.fetch_sub(1, std::memory_order_relaxed);
  queued_.fetch_sub(1, std::memory_order_relaxed);
}

void pod_slots::release_row(std::size_t r) noexcept {
  {
    guard g(*this);
    held_.fetch_sub(row_[r].held.exchange(0, std::memory_order_relaxed), std::memory_order_relaxed);
    queued_.fetch_sub(row_[r].queued.exchange(0, std::memory_order_relaxed), std::memory_order_relaxed);
  }
  releases_.fetch_add(1, std::memory_order_release);
}

}  // namespace sluice::admission
