// The settings of a test's connection to its own redis-server on 127.0.0.1 (redis_server.hpp):
// a generous command timeout (the machine is shared; the deadline tests set their own) and quick
// reconnects. Test-only.
#pragma once

#include <chrono>
#include <cstdint>

#include "redis/options.hpp"

namespace sluice::test {

inline redis::settings local_redis_settings(std::uint16_t port) {
  using namespace std::chrono_literals;
  redis::settings s;
  s.server.host = "127.0.0.1";
  s.server.port = port;
  s.command_timeout = 1s;
  s.backoff_min = 10ms;
  s.backoff_max = 100ms;
  return s;
}

}  // namespace sluice::test
