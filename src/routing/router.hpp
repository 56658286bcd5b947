// router: which upstream gets the next attempt of a request. Process-wide and thread-safe; every
// worker thread's handler asks it. For the request's model it considers the upstreams serving that
// model and skips those that cannot take a request now (open circuit, failed active probe, saturated
// engine, at their own concurrency limit, out of paced budget); among the rest it prefers ones this
// request has not tried yet, then the least outstanding requests per unit of weight, ties broken at
// random in proportion to weight. A pick is a lease: it holds the upstream's outstanding count, the
// half-open probe slot and the paced reservation until the attempt's outcome is reported.
#pragma once

#include <atomic>
#include <functional>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "routing/circuit_breaker.hpp"
#include "routing/engine_pressure.hpp"
#include "routing/options.hpp"
#include "routing/pacer.hpp"
#include "config/url.hpp"

namespace sluice::routing {

// Makes upstream i's paced budget: the local pacer by default; a shared one (Redis, a pod's table)
// plugs in here. An error: the budget has no place (a pod's table is full).
using budget_factory = std::function<result<std::unique_ptr<rate_budget>>(const upstream_spec& spec, time_point now)>;

// Where a worker process of a pod keeps its upstreams' circuits: the pod's table (null: in this
// process), its worker row and config generation.
struct circuit_place {
  pod_circuits* table = nullptr;
  std::size_t worker = 0;
  std::uint32_t generation = 0;
};

struct upstream_state {
  // `seat`: the pod's circuit (a worker process of a pod); none: the circuit lives in this process.
  upstream_state(const upstream_spec& s, config::url u, std::string auth, const options& o,
                 std::unique_ptr<rate_budget> budget, std::optional<pod_circuit_seat> seat = {});

  const upstream_spec& spec;
  const config::url target;
  const std::string authorization;  // "Bearer <key>" or empty; never logged
  circuit_breaker breaker;
  std::unique_ptr<rate_budget> pace;  // never null
  std::atomic<std::uint64_t> outstanding{0};
  std::atomic<bool> probe_ok{true};           // the active /v1/models probe's last verdict
  std::atomic<bool> engine_saturated{false};  // the last fresh engine scrape said so
  std::atomic<std::int64_t> engine_scraped_at{0};  // steady-clock ns of that scrape (0: never)
};

// Why nothing could be picked now.
enum class no_pick : std::uint8_t {
  unknown_model,  // no upstream serves the model -> 404
  unhealthy,      // every upstream for it has an open circuit or failed its probe -> 503
  busy,           // paced, saturated or at concurrency: worth waiting until `retry_at` -> hold
};

class router;

class lease {
 public:
  lease() = default;
  lease(lease&& o) noexcept { *this = std::move(o); }
  lease& operator=(lease&& o) noexcept;
  lease(const lease&) = delete;
  lease& operator=(const lease&) = delete;
  ~lease();

  explicit operator bool() const noexcept { return r_ != nullptr; }
  std::size_t index() const noexcept { return index_; }
  upstream_state& upstream() const;
  bool probe() const noexcept { return probe_; }
  std::uint64_t reserved_tokens() const noexcept { return tokens_; }

  // The attempt's outcome, for the circuit breaker; each ends the lease's breaker part.
  void succeeded();
  void failed(time_point now);
  // The request never reached the upstream (connect failure): give the paced reservation back.
  void refund(time_point now);
  // Actual token use reported by the upstream: settles the reservation.
  void settle(std::uint64_t actual_tokens, time_point now);
  // A budget shared with other replicas must confirm this pick (one round trip) before the attempt;
  // nullopt: confirmed (or nothing to confirm), else the wait before it could be, and this lease
  // should be dropped (its reservation is back).
  bool needs_confirm() const noexcept;
  task<std::optional<duration>> confirm();

 private:
  friend class router;
  router* r_ = nullptr;
  std::size_t index_ = 0;
  bool probe_ = false;
  bool reported_ = false;
  std::uint64_t tokens_ = 0;
  budget_ticket ticket_;  // shared budgets: where the reservation lives beyond this process
};

struct pick_result {
  lease picked;                    // valid when something was picked
  no_pick why = no_pick::busy;     // otherwise
  time_point retry_at{};           // busy/unhealthy: when it is worth asking again
  bool paced = false;              // busy: some upstream was out of paced budget (or in retry-after)
  bool engine = false;             // busy: some upstream's engine was saturated
};

class router {
 public:
  // `authorizations[i]`: the header value for upstream i ("Bearer ..."), or empty. Each upstream's
  // paced budget is a local pacer seeded from its spec, its circuit in this process. `o` is
  // finished (options::finish validated every URL: one it did not is a bug, thrown).
  router(const options& o, std::vector<std::string> authorizations, time_point now);
  // The same, `budgets` making each upstream's paced budget (null: local pacers) and `circuits`
  // placing the circuits; an error when a budget or a circuit finds no place (a pod's full table).
  static result<std::unique_ptr<router>> make(const options& o, std::vector<std::string> authorizations,
                                              time_point now, budget_factory budgets, circuit_place circuits);

  std::size_t size() const noexcept { return ups_.size(); }
  upstream_state& at(std::size_t i) { return *ups_[i]; }
  const upstream_state& at(std::size_t i) const { return *ups_[i]; }

  // `tried[i]` true: this request already failed on upstream i (asked last, not never).
  pick_result pick(std::string_view model, std::uint64_t tokens, const std::vector<bool>& tried, time_point now);
  // Is any upstream able to take traffic now (readiness)? Paced or saturated ones count as able.
  bool any_healthy(time_point now) const;
  bool serves(std::string_view model) const;
  // Is an upstream for `model` this request has not tried ready now? (Then a retry fails over at
  // once instead of backing off.)
  bool has_ready_untried(std::string_view model, std::uint64_t tokens, const std::vector<bool>& tried, time_point now);

  // The engine scraper's verdict for upstream i.
  void set_engine(std::size_t i, bool saturated, time_point now);
  bool engine_holds(const upstream_state& u, time_point now) const;

  const options& settings() const noexcept { return o_; }

 private:
  friend class lease;
  explicit router(const options& o);
  result<void> add_upstreams(std::vector<std::string> authorizations, time_point now, const budget_factory& budgets,
                             const circuit_place& circuits);
  // The one readiness rule of an upstream for a request of `tokens` now, in the order the reasons
  // are checked; `wait` (when asked) gets the pacer's wait.
  enum class readiness : std::uint8_t {
    ready,
    probe_failed,
    circuit_open,
    probe_in_flight,  // half-open, its one probe taken
    engine_saturated,
    at_concurrency,
    paced,
  };
  readiness ready_state(upstream_state& u, std::uint64_t tokens, time_point now,
                        std::optional<duration>* wait = nullptr) const;

  // pick()'s steps: the upstreams serving the model looked at (the ready ones and, for the rest,
  // when to ask again); one of the ready ones chosen (its index in `ready`); a lease on it taken,
  // unless another thread took its probe slot or budget first (then `earliest` is updated).
  struct candidate {
    std::size_t i;
    double load;  // outstanding per unit of weight
  };
  struct survey;
  void survey_upstreams(std::string_view model, std::uint64_t tokens, time_point now, survey& s,
                        pick_result& out) const;
  void not_ready(readiness r, upstream_state& u, const std::optional<duration>& wait, time_point now, survey& s,
                 pick_result& out) const;
  std::size_t choose(const std::vector<candidate>& ready, const std::vector<bool>& tried);
  bool try_lease(std::size_t i, std::uint64_t tokens, time_point now, pick_result& out, time_point& earliest);

  const options& o_;
  std::vector<std::unique_ptr<upstream_state>> ups_;
  std::mutex rng_mu_;
  std::minstd_rand rng_;
};

}  // namespace sluice::routing
