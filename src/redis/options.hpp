// Redis client settings: where the server is, where its password comes from, the per-command
// deadline, the in-flight bound per connection and the reconnect pacing. `options` is the frozen
// config value (from config file and flags); `settings` is what a connection runs with, resolved
// once at start-up (URL parsed, password read from the environment).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "core/units.hpp"
#include "redis/url.hpp"

namespace sluice::config {
class option_table;
}

namespace sluice::redis {

using namespace std::chrono_literals;

struct settings {
  endpoint server;
  // A command (or a script run, NOSCRIPT retry included) not answered within this fails with
  // outcome::timeout. 50 ms: a Redis on the same network answers in well under a millisecond, so a
  // reply that late means a stalled server, and an admission decision must not hold a request longer.
  duration command_timeout = 50ms;
  // Commands written or queued and not yet answered, per connection. One more fails at once with
  // outcome::overloaded (nothing queues behind the bound).
  std::uint64_t max_in_flight = 1024;
  duration connect_timeout = 1s;      // resolve + TCP connect + TLS + AUTH/SELECT/SCRIPT LOAD
  duration backoff_min = 50ms;        // reconnect delay: full jitter in [min, min * 2^(failures + 1)],
  duration backoff_max = 2s;          //   capped at max (redis/backoff.hpp)
  // Commands are pending and nothing has been read for this long: the server is considered dead
  // (a hung process, a partition TCP does not see) and the connection is dropped and remade.
  duration stall_timeout = 2s;
};

// What a replica does with a limit decision while Redis cannot make it (down, slower than
// `redis-command-timeout`, or out of in-flight slots).
enum class failure_mode : std::uint8_t {
  local,   // each replica decides alone, by its own limits divided by `redis-fallback-replicas`
  closed,  // refuse: 503 with Retry-After
};
std::string_view to_string(failure_mode m) noexcept;

struct options {
  std::string url;                     // `redis`: empty = no Redis (every limit stays local)
  std::string password_env;            // `redis-password-env`: variable holding the password
  duration command_timeout = 50ms;     // `redis-command-timeout`
  std::uint64_t max_in_flight = 1024;  // `redis-max-in-flight`, per connection (worker thread)
  // Every key sluice writes starts with this (several fleets may share one Redis).
  std::string key_prefix = "sluice:";  // `redis-key-prefix`
  // A concurrency slot held in Redis expires this long after its replica last renewed it; each
  // replica renews all of its slots every lease/3, so a replica killed with `kill -9` frees its
  // slots within one lease.
  duration lease = 30s;  // `redis-lease`
  failure_mode on_failure = failure_mode::local;  // `redis-failure-mode`
  // `local` mode divides each shared limit by this (the replicas the fleet runs), so that the fleet
  // stays near its budget while every replica decides alone.
  std::uint64_t fallback_replicas = 1;  // `redis-fallback-replicas`

  void register_options(config::option_table& t);
  bool enabled() const noexcept { return !url.empty(); }
  // Parses the URL and reads the password variable (when named: it must be set and not empty; it
  // replaces a password in the URL). Errors name the option, never the password.
  result<settings> resolve() const;
};

}  // namespace sluice::redis
