#include "http/server_options.hpp"

#include <algorithm>

#include "config/option_table.hpp"

namespace sluice::http {

void server_options::register_options(config::option_table& t) {
  t.add("listen", "address to listen on, HOST:PORT (port 0 picks a free port)", listen)
      .add("threads", "worker threads, each with its own event loop (0 = one per core)", threads)
      .add_size("max-header-bytes", "largest request head accepted (over it: 431)", max_header_bytes)
      .add_size("max-body-bytes", "largest request body accepted (over it: 413)", max_body_bytes)
      .add_size("max-request-line-bytes", "longest request line accepted, method, target and version (over it: 414)",
                max_request_line_bytes)
      .add("max-header-fields", "most request header fields accepted (over it: 431)", max_header_fields)
      .add_duration("header-timeout", "time for a whole request head to arrive (over it: 408)", header_timeout)
      .add_duration("body-timeout", "time for a whole request body to arrive; a streamed upload's, for each piece (over it: 408)", body_timeout)
      .add_duration("idle-timeout", "keep-alive connection idle time before it is closed", idle_timeout)
      .add_duration("write-stall-timeout", "a client that accepts no byte for this long is disconnected",
                    write_stall_timeout)
      .add_duration("linger-timeout",
                    "after a refusal that closes the connection: how long the client's further bytes are read and "
                    "dropped before the close, so it reads the answer (0 = close at once)",
                    linger_timeout)
      .add_size("linger-bytes", "after a refusal that closes the connection: at most this many further bytes are dropped",
                linger_bytes)
      .add("max-connections",
           "open client connections at most, more are closed at once (0 = half the descriptor limit, at most 20000)",
           max_connections)
      .add("admin-listen", "a second address, HOST:PORT, serving only /healthz, /readyz and /metrics, outside max-connections",
           admin_listen)
      .add("admin-max-connections", "open connections at most on admin-listen", admin_max_connections)
      .add("accept-share-slack",
           "--processes N: connections a worker may hold above the average of its generation's workers before it "
           "stops accepting and leaves new ones to the others",
           accept_share_slack);
}

std::uint64_t effective_max_connections(std::uint64_t configured, std::uint64_t fd_soft_limit) noexcept {
  if (configured != 0) return configured;
  if (fd_soft_limit == 0) return max_connections_cap;
  std::uint64_t usable = fd_soft_limit > fd_reserve ? fd_soft_limit - fd_reserve : 0;
  return std::clamp<std::uint64_t>(usable / 2, 1, max_connections_cap);
}

}  // namespace sluice::http
