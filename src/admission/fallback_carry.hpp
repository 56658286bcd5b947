// admission::fallback_carry: one client key's counts carried across the switches of the shared
// limits' `local` failure mode (docs/scale-out.md). A plain value; its owner locks it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

namespace sluice::admission {

// Without it each switch handed out a fresh budget: falling back, the replica's own buckets were
// full (idle while Redis decided); coming back, Redis's had refilled through the outage (or were
// full, restarted empty) and knew nothing of what was admitted meanwhile. So it keeps what the
// fleet had left at Redis's last answer for the key, and what this replica admitted alone since:
//   falling back, the local buckets start at the fleet's level (refilled since), divided like the
//   limits, instead of full;
//   coming back, Redis's level is lowered to that level, less what this replica admitted alone
//   (bucket_observe only ever lowers, so several replicas coming back each lower it to their view).
class fallback_carry {
 public:
  using clock = std::chrono::steady_clock;
  struct levels {
    double requests = 0;
    double tokens = 0;
  };

  fallback_carry(std::uint64_t rpm, std::uint64_t tpm) noexcept : rpm_(rpm), tpm_(tpm) {}

  // Redis decided an admission: the fleet has `left` now. Ends deciding alone.
  void answered(levels left, clock::time_point now) noexcept;
  // A decision made alone: true when it is the first since Redis last answered (the switch).
  bool deciding_alone() noexcept;
  void admitted_alone(std::uint64_t tokens) noexcept;
  bool alone() const noexcept { return alone_; }

  // What the fleet had left at Redis's last answer, refilled at the limits' rates since, at most the
  // limits; nullopt when Redis never answered for this key (the process started without it).
  std::optional<levels> fleet_left(clock::time_point now) const noexcept;
  // Coming back to Redis: what it may hold for the key at most now: fleet_left (the limits when
  // unknown) less what this replica admitted alone, never below zero. Only while alone().
  levels coming_back(clock::time_point now) const noexcept;

 private:
  std::uint64_t rpm_, tpm_;
  std::optional<levels> last_;
  clock::time_point at_{};
  bool alone_ = false;
  levels admitted_{};  // admitted alone since the switch
};

}  // namespace sluice::admission
