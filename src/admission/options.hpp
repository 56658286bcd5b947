// admission::options: every limit of the admission module (concurrency cap, wait queue, memory
// budget, per-key limits) with its name, default and config key. A plain value: filled once at
// start-up from the option table, then copied into the components and never changed.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "config/option_table.hpp"
#include "core/error.hpp"
#include "core/units.hpp"

namespace sluice::admission {

struct options {
  // Global cap on concurrent upstream requests, across all worker threads.
  std::uint64_t max_streams = 256;
  // Requests allowed to wait for a slot; beyond this they are refused at once (503 queue_full).
  std::uint64_t queue_depth = 1024;
  // Requests of one client key allowed to wait at once; beyond this that key's requests are
  // refused at once (503 key_queue_full) while others still queue. 0 = no per-key cap. Requests
  // without a key share one lane that has no cap of its own. A default above queue_depth is cut to
  // it (the defaults keep a quarter of the default queue); a value given above it is an error.
  std::uint64_t queue_per_key = 256;
  // Whether queue-per-key was given (config file or flag) rather than left at its default.
  bool queue_per_key_given = false;
  // Longest a request waits in the queue before it is refused (503 queue_timeout).
  duration queue_timeout = std::chrono::seconds(10);
  // Memory budget in bytes; 0 = the cgroup limit, else physical memory.
  std::uint64_t memory_limit = 0;
  // RSS above this fraction of the budget sheds new requests (503 memory).
  double shed_threshold = 0.90;
  // RSS at or below this fraction of the budget reports ready (readiness probe).
  double ready_threshold = 0.80;
  // Bytes reserved per admitted stream: the stream buffer bound the relay may hold.
  std::uint64_t per_stream_reservation = 64 * 1024;
  // Streams reset per pressure tick while the budget is saturated (largest buffers first).
  std::uint64_t max_resets_per_tick = 8;
  // How often the gateway samples RSS and runs the pressure tick.
  duration memory_sample_interval = std::chrono::milliseconds(250);
  // Optional API keys file (see docs/admission.md); empty = no per-key auth or limits.
  std::string keys_file;

  // Registers every field above under its kebab-case name (--max-streams, max-streams: ...).
  void register_options(config::option_table& table);
  // Cross-field checks (thresholds in range, ready <= shed, non-zero cap and interval, a given
  // queue-per-key <= queue-depth).
  result<void> validate() const;
};

}  // namespace sluice::admission
