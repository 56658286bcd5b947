#include "redis/metrics.hpp"

namespace sluice::redis {

std::string_view to_string(outcome o) noexcept {
  switch (o) {
    case outcome::ok: return "ok";
    case outcome::error_reply: return "error_reply";
    case outcome::timeout: return "timeout";
    case outcome::disconnected: return "disconnected";
    case outcome::overloaded: return "overloaded";
    case outcome::protocol_error: return "protocol_error";
    case outcome::cancelled: return "cancelled";
  }
  return "unknown";
}

// Round trips to a nearby Redis are tens of microseconds to a few milliseconds; the deadline is
// tens of milliseconds. 25 µs .. 1 s.
static constexpr std::array<double, 15> redis_buckets = {0.000025, 0.00005, 0.0001, 0.00025, 0.0005,
                                                         0.001,    0.0025,  0.005,  0.01,    0.025,
                                                         0.05,     0.1,     0.25,   0.5,     1.0};

metrics::metrics(std::span<const script> scripts) {
  auto& family = counter_family("sluice_redis_commands_total", "Redis commands by script and outcome");
  std::vector<std::string> names{"command"};
  for (const auto& s : scripts) names.push_back(s.name);
  for (const auto& name : names) {
    std::array<prometheus::Counter*, outcome_count> row{};
    for (outcome o : all_outcomes) {
      row[static_cast<std::size_t>(o)] = &family.Add({{"script", name}, {"outcome", std::string(to_string(o))}});
    }
    commands_.push_back(row);
  }
  latency_ = &histograms("sluice_redis_command_seconds", "Round trip of answered Redis commands and script runs",
                         redis_buckets)
                  .at(0);
  connected_ = &gauge("sluice_redis_connected", "Redis connections up (one per worker thread when healthy)");
  in_flight_ = &gauge("sluice_redis_in_flight", "Redis commands queued or written and not yet answered");
}

void metrics::command_done(std::size_t label, outcome o) noexcept {
  if (label >= commands_.size()) label = 0;
  commands_[label][static_cast<std::size_t>(o)]->Increment();
}

void metrics::connected(bool up) noexcept {
  if (up) {
    connected_->Increment();
  } else {
    connected_->Decrement();
  }
}

}  // namespace sluice::redis
