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
  duration header_timeout = 10s;                   // whole head must arrive within this -> 408
  duration body_timeout = 30s;                     // whole body must arrive within this -> 408
  duration idle_timeout = 60s;                     // keep-alive connection with no new request: closed quietly
  duration write_stall_timeout = 30s;              // a client that accepts no byte for this long is cut
  std::uint64_t max_connections = 20000;           // accepted connections over this are closed at once

  void register_options(config::option_table& t);
};

}  // namespace sluice::http
