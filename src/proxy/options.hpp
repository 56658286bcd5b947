// Settings of the request story (parse -> upstream -> relay). A frozen value from config.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
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

  void register_options(config::option_table& t);
  // Checks `routes` names only routes there are.
  result<void> finish() const;
  bool serves(obs::route r) const noexcept;
};

}  // namespace sluice::proxy
