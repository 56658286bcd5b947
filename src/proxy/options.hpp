// Settings of the request story (parse -> upstream -> relay). A frozen value from config.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/units.hpp"
#include "observability/metrics.hpp"

namespace sluice::config {
class option_table;
}

namespace sluice::proxy {

struct options {
  // The one bounded per-stream buffer: upstream bytes read but not yet written to the client, and
  // the largest single SSE event accepted. It starts small and grows only up to this bound.
  std::uint64_t stream_buffer = 64 * 1024;
  std::uint64_t stream_buffer_initial = 1024;  // a few typical chat chunks; grows on demand
  // The allow-list of API routes served (`routes:`, their metric labels: chat_completions,
  // completions, responses, models, messages, embeddings, moderations); empty: every one. The
  // probes (/healthz, /readyz, /metrics) are always served. Another route answers 404.
  std::vector<std::string> routes;
  // The largest request body a streamed upload route takes (files, audio, image edits, upload
  // parts; ADR 0027): over it, 413 counted as upload_too_large. The other routes keep max-body-bytes.
  std::uint64_t max_upload_bytes = 512ull * 1024 * 1024;
  // A Realtime session (GET /v1/realtime): the largest message either side may send (its frames are
  // relayed in 16 KiB pieces, so this bounds no buffer; past it the session closes with 1009), and
  // how long a side may stay silent with its pings unanswered before the session ends.
  std::uint64_t realtime_max_message_bytes = 16ull * 1024 * 1024;
  duration realtime_idle_timeout = std::chrono::seconds(60);

  void register_options(config::option_table& t);
  // Checks `routes` names only routes there are.
  result<void> finish() const;
  bool serves(obs::route r) const noexcept;
};

}  // namespace sluice::proxy
