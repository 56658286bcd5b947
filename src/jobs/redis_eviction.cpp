#include "jobs/redis_eviction.hpp"

namespace sluice::jobs {

task<eviction_policy> read_eviction_policy(redis::connection& c, duration timeout) {
  eviction_policy out;
  auto r = co_await c.command_within(timeout, "CONFIG", "GET", "maxmemory-policy");
  if (!r.ok()) {
    // An error reply (CONFIG renamed or disabled: "unknown command") says so; a timeout says nothing.
    out.policy = r.status == redis::outcome::error_reply ? r.value.str : std::string("redis did not answer");
    co_return out;
  }
  if (r.value.type != redis::reply::kind::array || r.value.elements.size() < 2) {
    out.policy = "unexpected CONFIG GET reply";
    co_return out;
  }
  out.known = true;
  out.policy = r.value.elements[1].str;
  co_return out;
}

}  // namespace sluice::jobs
