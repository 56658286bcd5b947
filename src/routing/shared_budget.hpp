// routing::shared_budget: one upstream's paced budget held by every replica together, through
// Redis (docs/scale-out.md). The router still picks on a local view (a pacer mirroring what Redis
// last said, plus this process's own reservations), so a pick costs no round trip; the picked
// lease is then confirmed by one `upstream_admit` run, which charges a request, the token estimate
// and, under max-concurrent, a slot, for the whole fleet, or refuses (the view then waits for what
// Redis said). What the upstream answers in x-ratelimit-* (remaining, retry-after) is pushed to
// Redis (`upstream_observe`) so every replica paces by it. The lease's end settles everything it
// holds in one `upstream_settle` run. Time in the scripts is Redis's TIME.
//
// When Redis cannot decide, the failure mode applies: `local` confirms against this replica's
// share (the configured limits divided by redis-fallback-replicas), `closed` refuses for a second
// (the request holds, then gets the gateway's 429/503 like any spent budget).
//
// Threading: every method is thread-safe; confirm() runs on a gateway worker thread (its Redis
// connection). Lifetime: outlives every lease and the worker pool's last run.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "redis/availability.hpp"
#include "redis/client.hpp"
#include "redis/leases.hpp"
#include "redis/options.hpp"
#include "routing/options.hpp"
#include "routing/pacer.hpp"
#include "runtime/task_group.hpp"

namespace sluice::routing {

// The scripts and the client every shared budget of the process uses, and the state they share.
struct shared_budget_context {
  shared_budget_context(const redis::options& o, redis::availability& a, redis::lease_keeper& l)
      : opts(o), availability(a), leases(l) {}

  const redis::options& opts;
  redis::availability& availability;
  redis::lease_keeper& leases;
  redis::client* client = nullptr;  // set by attach(); null: not yet, or detached after the pool
  std::size_t admit_script = 0, settle_script = 0, observe_script = 0;
  runtime::task_group tasks{"shared budget settles"};  // settles and observations in flight

  // The scripts to register with the client: upstream_admit, upstream_settle, upstream_observe.
  static std::vector<redis::script> scripts();
  void attach(redis::client& c, std::size_t first_script) {
    client = &c;
    admit_script = first_script;
    settle_script = first_script + 1;
    observe_script = first_script + 2;
  }
};

class shared_budget final : public rate_budget {
 public:
  shared_budget(const upstream_spec& spec, time_point now, shared_budget_context& ctx);

  // The local view: what the router picks by.
  std::optional<duration> try_reserve(std::uint64_t tokens, time_point now) override {
    return view_.try_reserve(tokens, now);
  }
  void refund(std::uint64_t tokens, time_point now) override { view_.refund(tokens, now); }
  void settle(std::uint64_t estimated, std::uint64_t actual, time_point now) override {
    view_.settle(estimated, actual, now);
  }
  void observe(const ratelimit_headers& h, time_point now) override;
  void block_until(time_point until) override;
  std::optional<duration> wait_time(std::uint64_t tokens, time_point now) override {
    return view_.wait_time(tokens, now);
  }
  bool has_token_budget() const override { return view_.has_token_budget(); }
  pacer_snapshot snapshot(time_point now) override { return view_.snapshot(now); }

  // Shared: only upstreams with a known budget or a concurrency cap take the round trip.
  bool shared() const noexcept override;
  task<std::optional<duration>> confirm(std::uint64_t tokens, budget_ticket& t) override;
  void release(budget_ticket& t) noexcept override;

  const std::string& bucket() const noexcept { return bucket_; }

 private:
  task<std::optional<duration>> confirm_alone(std::uint64_t tokens, budget_ticket& t, redis::outcome why);
  void spawn(std::size_t script, std::vector<std::string> keys, std::vector<std::string> args) noexcept;
  task<void> run_script(std::shared_ptr<redis::connection> c, std::size_t index, std::vector<std::string> keys,
                        std::vector<std::string> args);
  std::pair<std::string, std::string> limits_now(time_point now);

  const upstream_spec& spec_;
  shared_budget_context& ctx_;
  mutable pacer view_;  // what Redis last said, plus this process's reservations since
  pacer share_;  // this replica's share, used while Redis cannot decide (local mode)
  const std::uint64_t share_slots_;
  std::atomic<std::uint64_t> share_in_use_{0};
  const std::string bucket_, slots_;
};

}  // namespace sluice::routing
