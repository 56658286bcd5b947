#include "redis/options.hpp"

#include <cstdlib>

#include "config/option_table.hpp"

namespace sluice::redis {

std::string_view to_string(failure_mode m) noexcept { return m == failure_mode::closed ? "closed" : "local"; }

void options::register_options(config::option_table& t) {
  t.add("redis", "Redis URL for limits shared across replicas, redis://[user:password@]host:port/db or rediss:// (empty: off)",
        url)
      .add("redis-password-env", "environment variable holding the Redis password (replaces one in the URL)",
           password_env)
      .add_duration("redis-command-timeout", "deadline of one Redis command or script run", command_timeout)
      .add("redis-max-in-flight", "unanswered Redis commands per connection (one per worker thread); more fail at once",
           max_in_flight)
      .add("redis-key-prefix", "prefix of every Redis key sluice writes", key_prefix)
      .add_duration("redis-lease", "a concurrency slot held in Redis expires this long after its replica last renewed it",
                    lease)
      .add_custom({"redis-failure-mode",
                   "while Redis cannot decide: local (each replica alone, limits divided by redis-fallback-replicas) "
                   "or closed (503)",
                   "local",
                   [this](std::string_view v) -> result<void> {
                     if (v == "local") on_failure = failure_mode::local;
                     else if (v == "closed") on_failure = failure_mode::closed;
                     else return error::make(errc::bad_request, "redis-failure-mode: expected local or closed");
                     return ok;
                   }})
      .add("redis-fallback-replicas", "replicas the fleet runs: in local failure mode each shared limit is divided by this",
           fallback_replicas);
}

result<settings> options::resolve() const {
  auto parsed = parse_url(url);
  if (!parsed) return error::make(errc::bad_request, "redis: " + parsed.err().message);
  settings s;
  s.server = std::move(parsed.value());
  if (!password_env.empty()) {
    const char* v = std::getenv(password_env.c_str());
    if (v == nullptr || *v == '\0') {
      return error::make(errc::bad_request, "redis-password-env: variable " + password_env + " is not set or empty");
    }
    s.server.password = v;
  }
  if (command_timeout <= duration::zero()) return error::make(errc::bad_request, "redis-command-timeout must be positive");
  if (max_in_flight == 0) return error::make(errc::bad_request, "redis-max-in-flight must be at least 1");
  if (lease < std::chrono::seconds(1)) return error::make(errc::bad_request, "redis-lease must be at least 1s");
  if (fallback_replicas == 0) return error::make(errc::bad_request, "redis-fallback-replicas must be at least 1");
  if (key_prefix.find_first_of("{}") != std::string::npos)
    return error::make(errc::bad_request, "redis-key-prefix must not contain '{' or '}' (sluice places the hash tags)");
  s.command_timeout = command_timeout;
  s.max_in_flight = max_in_flight;
  return s;
}

}  // namespace sluice::redis
