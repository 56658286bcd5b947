#include "proxy/options.hpp"

#include "config/option_table.hpp"

namespace sluice::proxy {

void options::register_options(config::option_table& t) {
  t.add_size("stream-buffer", "per-stream buffer bound: unsent upstream bytes and the largest SSE event",
             stream_buffer)
      .add_size("stream-buffer-initial", "initial per-stream buffer (grows up to stream-buffer on demand)",
                stream_buffer_initial);
}

}  // namespace sluice::proxy
