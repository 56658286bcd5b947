#include "redis/options.hpp"

#include <cstdlib>

#include "config/option_table.hpp"

namespace sluice::redis {

void options::register_options(config::option_table& t) {
  t.add("redis", "Redis URL for limits shared across replicas, redis://[user:password@]host:port/db or rediss:// (empty: off)",
        url)
      .add("redis-password-env", "environment variable holding the Redis password (replaces one in the URL)",
           password_env)
      .add_duration("redis-command-timeout", "deadline of one Redis command or script run", command_timeout)
      .add("redis-max-in-flight", "unanswered Redis commands per connection (one per worker thread); more fail at once",
           max_in_flight);
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
  s.command_timeout = command_timeout;
  s.max_in_flight = max_in_flight;
  return s;
}

}  // namespace sluice::redis
