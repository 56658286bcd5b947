#include "admission/options.hpp"

namespace sluice::admission {

void options::register_options(config::option_table& table) {
  table.add("max-streams", "concurrent upstream requests admitted at once, across all threads", max_streams)
      .add("queue-depth", "requests that may wait for a free slot before new ones are refused", queue_depth)
      .add_duration("queue-timeout", "longest a request waits in the admission queue", queue_timeout)
      .add_size("memory-limit", "memory budget (0 = cgroup limit, else physical memory)", memory_limit)
      .add("shed-threshold", "fraction of the memory budget (RSS) above which new requests are shed", shed_threshold)
      .add("ready-threshold", "fraction of the memory budget (RSS) at or below which the gateway is ready",
           ready_threshold)
      .add_size("per-stream-reservation", "bytes of the memory budget reserved per admitted stream",
                per_stream_reservation)
      .add("max-resets-per-tick", "streams reset per pressure tick while memory is saturated", max_resets_per_tick)
      .add_duration("memory-sample-interval", "how often RSS is sampled and memory pressure handled",
                    memory_sample_interval)
      .add("keys-file", "API keys file: one 'key max_streams rpm [name]' per line", keys_file);
}

result<void> options::validate() const {
  if (max_streams == 0) return error::make(errc::bad_request, "max-streams must be at least 1");
  // The `!(x > 0)` form also rejects NaN.
  if (!(shed_threshold > 0.0) || shed_threshold > 1.0)
    return error::make(errc::bad_request, "shed-threshold must be in (0, 1]");
  if (!(ready_threshold > 0.0) || ready_threshold > shed_threshold)
    return error::make(errc::bad_request, "ready-threshold must be in (0, shed-threshold]");
  if (memory_sample_interval <= duration::zero())
    return error::make(errc::bad_request, "memory-sample-interval must be positive");
  return ok;
}

}  // namespace sluice::admission
