// Limits and timeouts of the downstream HTTP server. A frozen value built from config at start-up.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "core/units.hpp"

namespace sluice::config {
class option_table;
}

namespace sluice::http {

using namespace std::chrono_literals;

struct server_options {
  std::string listen = "127.0.0.1:8080";
  std::uint64_t threads = 0;                       // 0 = one per core
  std::uint64_t max_header_bytes = 16 * 1024;      // request head over this -> 431
  std::uint64_t max_body_bytes = 4 * 1024 * 1024;  // request body over this -> 413
  std::uint64_t max_request_line_bytes = 8 * 1024;  // request line over this -> 414
  std::uint64_t max_header_fields = 100;            // more header fields than this -> 431
  duration header_timeout = 10s;                   // whole head must arrive within this -> 408
  duration body_timeout = 30s;                     // whole body must arrive within this -> 408 (a streamed
                                                   // upload: each piece, ADR 0027)
  duration idle_timeout = 60s;                     // keep-alive connection with no new request: closed quietly
  duration write_stall_timeout = 30s;              // a client that accepts no byte for this long is cut
  // After a refusal that closes the connection (413, 431, ...): what the client still sends is
  // read and dropped for at most this long / this many bytes, so it reads the answer (not a reset).
  duration linger_timeout = 2s;
  std::uint64_t linger_bytes = 1024 * 1024;
  std::uint64_t max_connections = 0;               // accepted connections over this are closed at once;
                                                   // 0 = derived from the descriptor limit (below)
  // A second address for probes and metrics only (/healthz, /readyz, /metrics), with its own
  // connection cap: answered when the main listener is at max-connections. Empty: none.
  std::string admin_listen;
  std::uint64_t admin_max_connections = 64;
  // --processes N: connections a worker may hold above its generation's average before it stops
  // accepting and leaves new ones to the other workers of the pod (ADR 0016).
  std::uint64_t accept_share_slack = 2;

  void register_options(config::option_table& t);
};

// max-connections when it is left at 0: never more than this, however high the descriptor limit.
inline constexpr std::uint64_t max_connections_cap = 20000;
// Descriptors kept out of the derivation for listeners, event loops, timers, logs and /proc reads.
inline constexpr std::uint64_t fd_reserve = 64;

// The connection cap in force. `configured` wins when it is not 0. Otherwise every proxied stream
// holds two descriptors (its client and its upstream connection), so the cap is half of what the
// soft RLIMIT_NOFILE leaves after fd_reserve, at most max_connections_cap and at least 1.
// `fd_soft_limit` 0 means unknown (getrlimit failed): the cap is used. Pure.
std::uint64_t effective_max_connections(std::uint64_t configured, std::uint64_t fd_soft_limit) noexcept;

}  // namespace sluice::http
