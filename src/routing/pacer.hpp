// pacer: one upstream's request and token budgets, so sluice spends them itself instead of
// provoking 429s. Two token buckets (requests, tokens; core/token_bucket.hpp) seeded from config and
// refilled continuously over a minute, like OpenAI's limits; re-synchronised from the upstream's own
// x-ratelimit-{limit,remaining,reset}-{requests,tokens} headers; blocked outright until a 429's
// retry-after has passed. A request reserves one request and its estimated tokens before it is
// sent; the estimate is settled against the actual usage afterwards. The clock is a parameter.
// Thread-safe (one small mutex per upstream).
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>

#include "core/token_bucket.hpp"
#include "core/units.hpp"
#include "routing/circuit_breaker.hpp"
#include "runtime/asio.hpp"

namespace sluice::routing {

// What an upstream response said about its limits; absent fields were absent or unreadable.
struct ratelimit_headers {
  std::optional<double> limit_requests, remaining_requests;
  std::optional<double> limit_tokens, remaining_tokens;
  std::optional<duration> reset_requests, reset_tokens;
  std::optional<duration> retry_after;  // retry-after-ms, else retry-after (seconds)
  bool any() const {
    return limit_requests || remaining_requests || limit_tokens || remaining_tokens || reset_requests ||
           reset_tokens || retry_after;
  }
};

struct pacer_snapshot {
  double requests_limit = 0, requests_available = 0;  // limit 0: no request budget known
  double tokens_limit = 0, tokens_available = 0;      // limit 0: no token budget known
  time_point blocked_until{};
};

// Where a pick's reservation lives beyond this process, when its budget is shared
// (shared_budget.hpp): carried by the lease, settled once when the lease ends. Empty for the
// local pacer.
struct budget_ticket {
  std::uint64_t slot = 0;          // the concurrency slot held in Redis (0: none)
  bool in_redis = false;           // the request and its tokens are charged in Redis
  bool in_share = false;           // charged to this replica's share instead (Redis could not decide)
  bool share_slot = false;         // holds one of this replica's share of the concurrency slots
  std::int64_t token_delta = 0;    // tokens to charge more at the end (negative: a refund)
  std::uint64_t requests_back = 0; // requests to give back at the end (never reached the upstream)
};

// One upstream's paced budget, the seam where a budget shared by every replica (through Redis)
// replaces the local pacer below without the router or the pipeline changing. Thread-safe.
class rate_budget {
 public:
  virtual ~rate_budget() = default;

  // --- a budget shared with other replicas; the local pacer needs none of this ---
  // True when a pick's reservation (try_reserve, here) must be confirmed with confirm().
  virtual bool shared() const noexcept { return false; }
  // Confirms a reservation of one request and `tokens` with the budget every replica shares (one
  // round trip), taking a concurrency slot when the upstream has a cap. nullopt: confirmed (the
  // ticket says where it lives); else how long until it could be, and the reservation here has
  // been given back. Call on a gateway worker thread.
  virtual task<std::optional<duration>> confirm(std::uint64_t tokens, budget_ticket& t);
  // The lease ends: whatever the ticket holds is settled in one round trip.
  virtual void release(budget_ticket& t) noexcept;

  // Reserves one request and `tokens`; nullopt when reserved, else how long until it could be.
  virtual std::optional<duration> try_reserve(std::uint64_t tokens, time_point now) = 0;
  // Returns a reservation whose request never reached the upstream (e.g. connect failure).
  virtual void refund(std::uint64_t tokens, time_point now) = 0;
  // Corrects a reservation of `estimated` tokens by what the upstream reported as used.
  virtual void settle(std::uint64_t estimated, std::uint64_t actual, time_point now) = 0;
  // What an upstream response's x-ratelimit-* / retry-after headers said.
  virtual void observe(const ratelimit_headers& h, time_point now) = 0;
  // No request goes before `until` (a 429's retry-after).
  virtual void block_until(time_point until) = 0;

  // How long until a request of `tokens` would fit (nullopt: it fits now). Reserves nothing.
  virtual std::optional<duration> wait_time(std::uint64_t tokens, time_point now) = 0;
  // True when a token budget is known (configured or learned): usage is worth asking for.
  virtual bool has_token_budget() const = 0;
  virtual pacer_snapshot snapshot(time_point now) = 0;
};

// A paced budget's counters with no lock of their own: the pacer below keeps them under its mutex,
// a pod's worker processes under a process-shared one (pod_budget.hpp). Plain values, address-free.
struct pacer_state {
  pacer_state() = default;
  pacer_state(std::uint64_t requests_per_minute, std::uint64_t tokens_per_minute, time_point now);

  std::optional<duration> try_reserve(std::uint64_t tokens, time_point now);
  void refund(std::uint64_t tokens, time_point now);
  void settle(std::uint64_t estimated, std::uint64_t actual, time_point now);
  void observe(const ratelimit_headers& h, time_point now);
  void block_until(time_point until);
  std::optional<duration> wait_time(std::uint64_t tokens, time_point now);
  bool has_token_budget() const { return tokens.has_value(); }
  pacer_snapshot snapshot(time_point now);

  // Absent while that limit is unknown (neither configured nor learned yet): nothing to pace.
  std::optional<token_bucket> requests, tokens;
  time_point blocked_until{};

 private:
  void refill(time_point now);
  duration wait(std::uint64_t tokens, time_point now) const;
};

// The local budget: this process's own buckets.
class pacer final : public rate_budget {
 public:
  pacer(std::uint64_t requests_per_minute, std::uint64_t tokens_per_minute, time_point now);

  std::optional<duration> try_reserve(std::uint64_t tokens, time_point now) override;
  void refund(std::uint64_t tokens, time_point now) override;
  void settle(std::uint64_t estimated, std::uint64_t actual, time_point now) override;
  void observe(const ratelimit_headers& h, time_point now) override;
  void block_until(time_point until) override;
  std::optional<duration> wait_time(std::uint64_t tokens, time_point now) override;
  bool has_token_budget() const override;
  pacer_snapshot snapshot(time_point now) override;

 private:
  mutable std::mutex mu_;
  pacer_state st_;
};

}  // namespace sluice::routing
