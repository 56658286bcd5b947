// The Redis client's metrics, shared by every connection of the process (one per worker thread):
//   sluice_redis_commands_total{script,outcome}  commands by script ("command" for plain commands)
//   sluice_redis_command_seconds                 round trip of answered commands (ok or error reply)
//   sluice_redis_connected                       connections up (0..worker threads)
//   sluice_redis_in_flight                       commands written or queued, not yet answered
// The script label values are fixed at construction (the registered scripts' names), so the
// series count is known at start-up. Register with obs::metrics_registry::add_collectable.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "observability/component_metrics.hpp"
#include "redis/connection_types.hpp"
#include "redis/script.hpp"

namespace sluice::redis {

class metrics final : public obs::component_metrics {
 public:
  // Label index 0 is "command"; script i of `scripts` is label i + 1.
  explicit metrics(std::span<const script> scripts);

  void command_done(std::size_t label, outcome o) noexcept;
  void round_trip(double seconds) noexcept { latency_->observe(seconds); }
  void connected(bool up) noexcept;
  void in_flight(double delta) noexcept { in_flight_->Increment(delta); }

  std::size_t labels() const noexcept { return commands_.size(); }
  // Connections up now (any thread).
  double connected_now() const { return connected_->Value(); }

 private:
  std::vector<std::array<prometheus::Counter*, outcome_count>> commands_;
  obs::histogram* latency_ = nullptr;
  prometheus::Gauge* connected_ = nullptr;
  prometheus::Gauge* in_flight_ = nullptr;
};

}  // namespace sluice::redis
