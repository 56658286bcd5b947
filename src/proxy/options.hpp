// Settings of the request story (parse -> upstream -> relay). A frozen value from config.
#pragma once

#include <cstdint>

namespace sluice::config {
class option_table;
}

namespace sluice::proxy {

struct options {
  // The one bounded per-stream buffer: upstream bytes read but not yet written to the client, and
  // the largest single SSE event accepted. It starts small and grows only up to this bound.
  std::uint64_t stream_buffer = 64 * 1024;
  std::uint64_t stream_buffer_initial = 1024;  // a few typical chat chunks; grows on demand

  void register_options(config::option_table& t);
};

}  // namespace sluice::proxy
