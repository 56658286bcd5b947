#include "admission/options.hpp"

namespace sluice::admission {

void options::register_options(config::option_table& table) {
  table.add("max-streams", "concurrent upstream requests admitted at once, across all threads", max_streams)
      .add("queue-depth", "requests that may wait for a free slot before new ones are refused", queue_depth);
  // queue-per-key: the plain count parser, noting that the value was given (see validate()).
  config::option_table count;
  count.add("queue-per-key", "requests of one client key that may wait at once (0 = no per-key cap)", queue_per_key);
  config::option_spec per_key = count.specs().front();
  per_key.set = [parse = std::move(per_key.set), this](std::string_view v) -> result<void> {
    auto r = parse(v);
    if (r) queue_per_key_given = true;
    return r;
  };
  table.add_custom(std::move(per_key))
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
  // Only a value someone chose: the default (256) is cut to a smaller queue-depth by the queue.
  if (queue_per_key_given && queue_per_key > queue_depth)
    return error::make(errc::bad_request, "queue-per-key must be at most queue-depth");
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
