// admission::memory_budget: the process's memory budget (configured, cgroup or physical), byte
// reservations against it (RAII) and the RSS-derived states shed / ready / saturated.
// Thread-safe: reservations and samples are atomics; the budget must outlive every reservation.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "admission/options.hpp"

namespace sluice::admission {

// Where the budget came from, for the start-up log line.
enum class budget_source { configured, cgroup_v2, cgroup_v1, physical };
std::string_view to_string(budget_source s) noexcept;

struct budget_detection {
  std::uint64_t bytes = 0;
  budget_source source = budget_source::physical;
};

// Parses the content of a cgroup memory limit file. nullopt means "no limit": v2's "max", a
// v1 "unlimited" value (page-rounded LLONG_MAX and anything else at or above 2^60) or text that is
// not a number.
std::optional<std::uint64_t> parse_cgroup_limit(std::string_view text);

// Physical memory from sysconf (pages x page size).
std::uint64_t physical_memory_bytes();

// The budget: `configured` when non-zero, else the cgroup limit (v2 `<root>/memory.max`, then v1
// `<root>/memory/memory.limit_in_bytes`) when it is set and below physical memory, else physical.
// `cgroup_root` is injectable so tests can point it at a temp dir.
budget_detection detect_budget(std::uint64_t configured, const std::string& cgroup_root = "/sys/fs/cgroup",
                               std::uint64_t physical = physical_memory_bytes());

class memory_budget {
 public:
  // Returns the process's resident set size in bytes; the seam that lets tests fake pressure.
  using rss_source = std::function<std::size_t()>;

  // Bytes held against the budget; gives them back on destruction. Movable, not copyable.
  class reservation {
   public:
    reservation() = default;
    reservation(reservation&& o) noexcept : owner_(o.owner_), bytes_(o.bytes_) { o.owner_ = nullptr; o.bytes_ = 0; }
    reservation& operator=(reservation&& o) noexcept;
    reservation(const reservation&) = delete;
    reservation& operator=(const reservation&) = delete;
    ~reservation() { reset(); }

    std::uint64_t bytes() const noexcept { return bytes_; }
    explicit operator bool() const noexcept { return owner_ != nullptr; }
    void reset() noexcept;

   private:
    friend class memory_budget;
    reservation(memory_budget* owner, std::uint64_t bytes) : owner_(owner), bytes_(bytes) {}
    memory_budget* owner_ = nullptr;
    std::uint64_t bytes_ = 0;
  };

  // `rss` defaults to runtime::read_rss_bytes (from /proc/self/statm).
  memory_budget(std::uint64_t budget_bytes, double shed_threshold, double ready_threshold, rss_source rss = {});
  // Budget from detect_budget(opts.memory_limit) and the thresholds from `opts`.
  explicit memory_budget(const options& opts, rss_source rss = {});
  memory_budget(const memory_budget&) = delete;
  memory_budget& operator=(const memory_budget&) = delete;

  // Reserves `bytes` if reserved + bytes stays within the budget; never blocks.
  std::optional<reservation> try_reserve(std::uint64_t bytes);

  // Records an RSS sample (bytes). The gateway calls one of these at least every sample interval.
  void sample(std::size_t rss) noexcept { rss_.store(rss, std::memory_order_relaxed); }
  // Reads the rss source and records it; returns the sample.
  std::size_t sample();

  std::uint64_t budget() const noexcept { return budget_; }
  std::uint64_t reserved() const noexcept { return reserved_.load(std::memory_order_relaxed); }
  std::size_t rss() const noexcept { return rss_.load(std::memory_order_relaxed); }
  std::uint64_t shed_bytes() const noexcept { return shed_bytes_; }
  std::uint64_t ready_bytes() const noexcept { return ready_bytes_; }

  // RSS > shed_threshold x budget: new requests are refused (503, reason memory).
  bool over_shed_threshold() const noexcept { return rss() > shed_bytes_; }
  // RSS <= ready_threshold x budget: the readiness probe says yes.
  bool ready() const noexcept { return rss() <= ready_bytes_; }
  // RSS or reservations at or above the budget: the pressure tick resets streams.
  bool saturated() const noexcept { return rss() >= budget_ || reserved() >= budget_; }

 private:
  void give_back(std::uint64_t bytes) noexcept { reserved_.fetch_sub(bytes, std::memory_order_acq_rel); }

  std::uint64_t budget_;
  std::uint64_t shed_bytes_;
  std::uint64_t ready_bytes_;
  rss_source rss_source_;
  std::atomic<std::uint64_t> reserved_{0};
  std::atomic<std::size_t> rss_{0};
};

}  // namespace sluice::admission
