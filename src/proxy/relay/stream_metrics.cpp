#include "proxy/relay/stream_metrics.hpp"

namespace sluice::proxy {

stream_metrics::stream_metrics()
    : buffers_(&gauge("sluice_stream_active_buffers", "Streams currently holding a relay buffer.")),
      buffered_(&gauge("sluice_stream_buffered_bytes",
                       "Bytes held in stream buffers right now (relay buffers and upstream read buffers).")),
      stalls_(&counter("sluice_write_stalls_total",
                       "Streams cut because the client accepted no byte for write-stall-timeout "
                       "(their upstream request was closed).")),
      ttft_(histograms("sluice_time_to_first_token_seconds",
                       "Time from the request arriving to the first content event written to the client.",
                       obs::latency_buckets)),
      gaps_(histograms("sluice_inter_token_seconds", "Time between consecutive content events relayed on a stream.",
                       obs::latency_buckets)) {
  scraped("sluice_streams_active", "Upstream requests (streams and whole answers) currently in flight.", {},
          [this] { return static_cast<double>(active_.value()); });
  for (auto d : obs::all_byte_directions)
    bytes_[obs::index_of(d)] =
        &sharded("sluice_stream_bytes_total",
                 "Stream bytes read from upstreams (upstream) and written to clients (downstream).",
                 {{"direction", std::string(obs::to_string(d))}});
}

}  // namespace sluice::proxy
