// Upstream client settings: where to send requests, the key, pool bounds and per-phase timeouts.
// A frozen value built from config at start-up; shared read-only by every worker thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/units.hpp"

namespace sluice::config {
class option_table;
}

namespace sluice::upstream {

using namespace std::chrono_literals;

struct options {
  // `--upstream URL`, repeatable: each serves every model (the `upstreams:` list in
  // routing::options describes richer ones). Neither given: one upstream at default_url.
  std::vector<std::string> urls;
  static constexpr const char* default_url = "http://127.0.0.1:8081";
  std::string key_env = "OPENAI_API_KEY";      // the key is read from this environment variable
  std::uint64_t pool_max_idle = 256;           // idle keep-alive connections kept per worker thread
  duration pool_idle_timeout = 30s;            // an idle connection older than this is closed
  duration connect_timeout = 10s;              // DNS + TCP connect
  duration tls_timeout = 10s;                  // TLS handshake
  duration first_byte_timeout = 300s;          // request sent -> response head received
  duration idle_between_events = 300s;         // longest silence inside a response body
  std::uint64_t max_response_head = 64 * 1024; // upstream response head over this -> 502
  std::uint64_t max_response_body = 16 * 1024 * 1024;  // non-streamed body over this -> 502

  void register_options(config::option_table& t);
};

}  // namespace sluice::upstream
