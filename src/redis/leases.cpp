#include "redis/leases.hpp"

#include <cstdlib>
#include <random>
#include <vector>

#include "observability/log.hpp"

namespace sluice::redis {

namespace {
// Members per renewal run: keeps one script run short (Redis runs scripts one at a time).
constexpr std::size_t renew_batch = 256;
}  // namespace

lease_keeper::lease_keeper(std::string replica, duration lease) : replica_(std::move(replica)), lease_(lease) {}

std::string lease_keeper::random_replica_name() {
  std::random_device rd;
  std::uint64_t v = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  static constexpr char hex[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) out[static_cast<std::size_t>(i)] = hex[v & 0xf];
  return out;
}

script lease_keeper::renew_script() {
  // Time is Redis's: the replicas' clocks never meet. Only slots still there are renewed (XX): one
  // released while this renewal was on its way must not come back. The members not found are
  // answered, for the keeper to tell a release that raced the renewal from a slot Redis lost.
  return script::make("lease_renew", R"lua(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[1])
local missing = {}
for i = 2, #ARGV do
  if redis.call('ZADD', KEYS[1], 'XX', 'CH', now + lease, ARGV[i]) == 0 and
     not redis.call('ZSCORE', KEYS[1], ARGV[i]) then
    missing[#missing + 1] = ARGV[i]
  end
end
if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('PEXPIRE', KEYS[1], lease * 2) end
return missing
)lua");
}

long long lease_keeper::lease_ms() const noexcept {
  return std::chrono::duration_cast<std::chrono::milliseconds>(lease_).count();
}

std::string lease_keeper::member(std::uint64_t id) const { return replica_ + ":" + std::to_string(id); }

void lease_keeper::hold(const std::string& set, std::uint64_t id) {
  std::lock_guard lock(mu_);
  if (held_[set].insert(id).second) ++count_;
}

void lease_keeper::drop(const std::string& set, std::uint64_t id) {
  std::lock_guard lock(mu_);
  auto it = held_.find(set);
  if (it == held_.end()) return;
  count_ -= it->second.erase(id);
  if (it->second.empty()) held_.erase(it);  // the map holds only sets with live slots
}

std::size_t lease_keeper::held() const {
  std::lock_guard lock(mu_);
  return count_;
}

std::size_t lease_keeper::renew_once(connection& c, std::size_t renew_index, runtime::task_group& runs) {
  std::vector<std::pair<std::string, std::vector<std::string>>> batches;
  {
    std::lock_guard lock(mu_);
    for (const auto& [set, ids] : held_) {
      std::vector<std::string> args;
      for (auto id : ids) {
        if (args.empty()) args.push_back(std::to_string(lease_ms()));
        args.push_back(member(id));
        if (args.size() > renew_batch) batches.emplace_back(set, std::exchange(args, {}));
      }
      if (!args.empty()) batches.emplace_back(set, std::move(args));
    }
  }
  auto self = c.shared_from_this();
  for (auto& [set, args] : batches)
    runs.spawn(c.executor(), renew(self, renew_index, std::move(set), std::move(args)), "lease renewal");
  return batches.size();
}

task<void> lease_keeper::renew(std::shared_ptr<connection> c, std::size_t index, std::string set,
                               std::vector<std::string> args) {
  std::vector<std::string_view> a(args.begin(), args.end());
  const std::string_view key = set;
  response r = co_await c->run(index, std::span(&key, 1), a);
  if (!r.ok()) {
    renew_failed_.fetch_add(1, std::memory_order_relaxed);
    co_return;  // the next round tries again; a slot outlives a failed round by lease * 2/3
  }
  renew_ok_.fetch_add(1, std::memory_order_relaxed);
  // A missing member this replica still holds was lost by Redis (a restart, a partition longer than
  // the lease): that stream runs on uncounted until it ends. One released meanwhile is no news.
  std::uint64_t lost = 0;
  {
    std::lock_guard lock(mu_);
    auto it = held_.find(set);
    for (const auto& m : r.value.elements) {
      auto colon = m.str.rfind(':');
      if (it == held_.end() || colon == std::string::npos) break;
      if (it->second.count(std::strtoull(m.str.c_str() + colon + 1, nullptr, 10))) ++lost;
    }
  }
  if (lost > 0) {
    lost_.fetch_add(lost, std::memory_order_relaxed);
    obs::log_warn("redis lost concurrency slots of running streams: they run on uncounted",
                  {{"set", std::string_view(set)}, {"slots", lost}});
  }
}

task<void> lease_keeper::run(connection& c, std::size_t renew_index, runtime::task_group& runs) {
  net::steady_timer timer(c.executor());
  while (true) {
    timer.expires_after(lease_ / 3);
    error_code ec;
    co_await timer.async_wait(ec_out(ec));
    if (ec) co_return;  // cancelled: the gateway stops
    renew_once(c, renew_index, runs);
  }
}

}  // namespace sluice::redis
