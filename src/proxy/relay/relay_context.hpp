// What an SSE relay takes of the process: four of proxy::services (the stream metrics, the registry
// of live streams, the drain state, the secret scrubber) and its buffer's two sizes, so that the
// relay depends on these and not on the pipeline's whole world. A pipeline builds one and keeps it.
#pragma once

#include <cstddef>

#include "admission/stream_registry.hpp"
#include "proxy/drain_state.hpp"
#include "proxy/relay/stream_metrics.hpp"
#include "proxy/secret_scrubber.hpp"

namespace sluice::proxy {

struct relay_context {
  stream_metrics& streams;                   // sluice_stream_* (bytes, buffers, write stalls)
  admission::stream_registry& live_streams;  // the memory loop's view of each stream's buffer
  const drain_state& drain;                  // past the drain timeout a stream ends in-band
  const secret_scrubber& secrets;            // the gateway's upstream keys, masked from clients
  std::size_t buffer_initial = 0;            // stream-buffer-initial
  std::size_t buffer_max = 0;                // stream-buffer: the most one event may take
};

}  // namespace sluice::proxy
