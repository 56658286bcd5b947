#include "routing/router.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "routing/pod_budget.hpp"

namespace sluice::routing {

namespace {

circuit_settings circuit_of(const options& o) {
  return {o.circuit_failures, o.circuit_error_rate, o.circuit_window, o.circuit_min_volume, o.circuit_open_time,
          o.circuit_open_time_max};
}

circuit_breaker make_breaker(const options& o, const std::optional<pod_circuit_seat>& seat) {
  if (!seat) return circuit_breaker(circuit_of(o));
  return circuit_breaker(circuit_of(o), *seat);
}

result<std::unique_ptr<rate_budget>> local_pacer(const upstream_spec& s, time_point t) {
  return std::unique_ptr<rate_budget>(std::make_unique<pacer>(s.requests_per_minute, s.tokens_per_minute, t));
}

constexpr auto busy_poll = std::chrono::milliseconds(50);  // re-check of saturation / concurrency holds

std::int64_t ns_of(time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

}  // namespace

upstream_state::upstream_state(const upstream_spec& s, config::url u, std::string auth, const options& o,
                               std::unique_ptr<rate_budget> budget, std::optional<pod_circuit_seat> seat)
    : spec(s),
      target(std::move(u)),
      authorization(std::move(auth)),
      breaker(make_breaker(o, seat)),
      pace(std::move(budget)) {}

// --- lease ---------------------------------------------------------------------------------------

lease& lease::operator=(lease&& o) noexcept {
  if (this != &o) {
    this->~lease();
    r_ = std::exchange(o.r_, nullptr);
    index_ = o.index_;
    probe_ = o.probe_;
    reported_ = o.reported_;
    tokens_ = o.tokens_;
    ticket_ = std::exchange(o.ticket_, budget_ticket{});
  }
  return *this;
}

lease::~lease() {
  if (!r_) return;
  auto& u = upstream();
  u.pace->release(ticket_);
  if (probe_ && !reported_) u.breaker.release_probe();
  u.outstanding.fetch_sub(1, std::memory_order_relaxed);
  r_ = nullptr;
}

upstream_state& lease::upstream() const { return r_->at(index_); }

void lease::succeeded() {
  if (!r_ || reported_) return;
  reported_ = true;
  upstream().breaker.on_success(probe_);
}

void lease::failed(time_point now) {
  if (!r_ || reported_) return;
  reported_ = true;
  upstream().breaker.on_failure(now, probe_);
}

void lease::refund(time_point now) {
  if (!r_) return;
  upstream().pace->refund(tokens_, now);
  // A shared reservation is given back with the lease's end (one round trip).
  ticket_.token_delta -= static_cast<std::int64_t>(tokens_);
  ticket_.requests_back += 1;
  tokens_ = 0;
}

void lease::settle(std::uint64_t actual, time_point now) {
  if (!r_) return;
  upstream().pace->settle(tokens_, actual, now);
  ticket_.token_delta += static_cast<std::int64_t>(actual) - static_cast<std::int64_t>(tokens_);
  tokens_ = actual;
}

bool lease::needs_confirm() const noexcept { return r_ != nullptr && upstream().pace->shared(); }

task<std::optional<duration>> lease::confirm() {
  auto wait = co_await upstream().pace->confirm(tokens_, ticket_);
  if (wait) tokens_ = 0;  // given back by confirm()
  co_return wait;
}

// --- router --------------------------------------------------------------------------------------

router::router(const options& o) : o_(o), rng_(0x5eed) {}

router::router(const options& o, std::vector<std::string> auths, time_point now) : router(o) {
  auto added = add_upstreams(std::move(auths), now, local_pacer, {});
  if (!added) throw std::logic_error("router built from unfinished options: " + added.err().message);
}

result<std::unique_ptr<router>> router::make(const options& o, std::vector<std::string> auths, time_point now,
                                             budget_factory budgets, circuit_place circuits) {
  std::unique_ptr<router> r(new router(o));
  if (!budgets) budgets = local_pacer;
  if (auto added = r->add_upstreams(std::move(auths), now, budgets, circuits); !added) return std::move(added).err();
  return r;
}

result<void> router::add_upstreams(std::vector<std::string> auths, time_point now, const budget_factory& budgets,
                                   const circuit_place& circuits) {
  for (std::size_t i = 0; i < o_.upstreams.size(); ++i) {
    const upstream_spec& spec = o_.upstreams[i];
    auto u = config::parse_url(spec.url, config::query_rule::allowed);
    if (!u) return std::move(u).err();
    auto budget = budgets(spec, now);
    if (!budget) return std::move(budget).err();
    std::optional<pod_circuit_seat> seat;
    if (circuits.table != nullptr) {
      auto attached = attach_pod_circuit(pod_identity(spec), *circuits.table, circuits.worker, circuits.generation);
      if (!attached) return std::move(attached).err();
      seat = *attached;
    }
    ups_.push_back(std::make_unique<upstream_state>(spec, std::move(*u), i < auths.size() ? std::move(auths[i]) : "",
                                                    o_, std::move(*budget), seat));
  }
  return ok;
}

bool router::serves(std::string_view model) const {
  return std::any_of(ups_.begin(), ups_.end(), [&](const auto& u) { return u->spec.serves(model); });
}

bool router::any_healthy(time_point now) const {
  return std::any_of(ups_.begin(), ups_.end(), [&](const auto& u) {
    return u->probe_ok.load(std::memory_order_relaxed) && u->breaker.state(now) != circuit_state::open;
  });
}

void router::set_engine(std::size_t i, bool saturated, time_point now) {
  auto& u = *ups_.at(i);
  u.engine_saturated.store(saturated, std::memory_order_relaxed);
  u.engine_scraped_at.store(ns_of(now), std::memory_order_relaxed);
}

bool router::engine_holds(const upstream_state& u, time_point now) const {
  if (!u.engine_saturated.load(std::memory_order_relaxed)) return false;
  auto at = u.engine_scraped_at.load(std::memory_order_relaxed);
  return ns_of(now) - at <= std::chrono::duration_cast<std::chrono::nanoseconds>(o_.engine_stale_after).count();
}

router::readiness router::ready_state(upstream_state& u, std::uint64_t tokens, time_point now,
                                      std::optional<duration>* wait) const {
  if (!u.probe_ok.load(std::memory_order_relaxed)) return readiness::probe_failed;
  if (!u.breaker.available(now))
    return u.breaker.state(now) == circuit_state::open ? readiness::circuit_open : readiness::probe_in_flight;
  if (engine_holds(u, now)) return readiness::engine_saturated;
  if (u.spec.max_concurrent && u.outstanding.load(std::memory_order_relaxed) >= u.spec.max_concurrent)
    return readiness::at_concurrency;
  auto w = u.pace->wait_time(tokens, now);
  if (wait) *wait = w;
  return w ? readiness::paced : readiness::ready;
}

bool router::has_ready_untried(std::string_view model, std::uint64_t tokens, const std::vector<bool>& tried,
                               time_point now) {
  for (std::size_t i = 0; i < ups_.size(); ++i) {
    auto& u = *ups_[i];
    if ((i < tried.size() && tried[i]) || !u.spec.serves(model)) continue;
    if (ready_state(u, tokens, now) == readiness::ready) return true;
  }
  return false;
}

// What a look at the model's upstreams found: the ones ready now (with their load), and for the
// others when one may be worth asking again.
struct router::survey {
  std::vector<candidate> ready;
  bool any_model = false;
  bool any_healthy_for_model = false;
  time_point earliest = time_point::max();
};

pick_result router::pick(std::string_view model, std::uint64_t tokens, const std::vector<bool>& tried,
                         time_point now) {
  pick_result out;
  survey s;
  survey_upstreams(model, tokens, now, s, out);
  if (!s.any_model) {
    out.why = no_pick::unknown_model;
    return out;
  }
  // Untried first; then least load; ties at random in proportion to weight.
  while (!s.ready.empty()) {
    const std::size_t chosen = choose(s.ready, tried);
    if (try_lease(s.ready[chosen].i, tokens, now, out, s.earliest)) return out;
    s.ready.erase(s.ready.begin() + static_cast<std::ptrdiff_t>(chosen));
  }
  out.why = s.any_healthy_for_model ? no_pick::busy : no_pick::unhealthy;
  out.retry_at = s.earliest == time_point::max() ? now + busy_poll : s.earliest;
  return out;
}

void router::survey_upstreams(std::string_view model, std::uint64_t tokens, time_point now, survey& s,
                              pick_result& out) const {
  for (std::size_t i = 0; i < ups_.size(); ++i) {
    auto& u = *ups_[i];
    if (!u.spec.serves(model)) continue;
    s.any_model = true;
    std::optional<duration> wait;
    const readiness r = ready_state(u, tokens, now, &wait);
    if (r != readiness::ready) {
      not_ready(r, u, wait, now, s, out);
      continue;
    }
    s.any_healthy_for_model = true;
    const auto outstanding = u.outstanding.load(std::memory_order_relaxed);
    s.ready.push_back({i, static_cast<double>(outstanding) / static_cast<double>(u.spec.weight)});
  }
}

void router::not_ready(readiness r, upstream_state& u, const std::optional<duration>& wait, time_point now,
                       survey& s, pick_result& out) const {
  switch (r) {
    case readiness::probe_failed: s.earliest = std::min(s.earliest, now + o_.probe_interval); return;
    case readiness::circuit_open: s.earliest = std::min(s.earliest, u.breaker.retry_at()); return;
    case readiness::probe_in_flight:  // half-open with its probe in flight: the verdict is moments away
    case readiness::at_concurrency:
      s.any_healthy_for_model = true;
      s.earliest = std::min<time_point>(s.earliest, now + busy_poll);
      return;
    case readiness::engine_saturated:
      s.any_healthy_for_model = true;
      out.engine = true;
      s.earliest = std::min<time_point>(s.earliest, now + busy_poll);
      return;
    case readiness::paced:
      s.any_healthy_for_model = true;
      out.paced = true;
      s.earliest = std::min(s.earliest, now + *wait);
      return;
    case readiness::ready: return;  // survey_upstreams() takes it
  }
}

std::size_t router::choose(const std::vector<candidate>& ready, const std::vector<bool>& tried) {
  auto untried = [&](const candidate& c) { return c.i >= tried.size() || !tried[c.i]; };
  const bool any_untried = std::any_of(ready.begin(), ready.end(), untried);
  double best = std::numeric_limits<double>::max();
  for (const auto& c : ready)
    if (!any_untried || untried(c)) best = std::min(best, c.load);
  std::vector<std::size_t> tied;
  std::uint64_t weight_sum = 0;
  for (std::size_t k = 0; k < ready.size(); ++k) {
    const auto& c = ready[k];
    if ((any_untried && !untried(c)) || c.load > best) continue;
    tied.push_back(k);
    weight_sum += ups_[c.i]->spec.weight;
  }
  if (tied.size() <= 1) return tied.front();
  std::uint64_t roll;
  {
    std::lock_guard lk(rng_mu_);
    roll = std::uniform_int_distribution<std::uint64_t>(0, weight_sum - 1)(rng_);
  }
  for (auto k : tied) {
    auto w = ups_[ready[k].i]->spec.weight;
    if (roll < w) return k;
    roll -= w;
  }
  return tied.front();
}

bool router::try_lease(std::size_t i, std::uint64_t tokens, time_point now, pick_result& out, time_point& earliest) {
  auto& u = *ups_[i];
  bool probe = false;
  bool got_breaker = u.breaker.try_acquire(now, probe);
  std::optional<duration> wait;
  if (got_breaker) wait = u.pace->try_reserve(tokens, now);
  if (got_breaker && !wait) {
    u.outstanding.fetch_add(1, std::memory_order_relaxed);
    out.picked.r_ = this;
    out.picked.index_ = i;
    out.picked.probe_ = probe;
    out.picked.tokens_ = tokens;
    return true;
  }
  // Lost a race with another thread for the probe slot or the budget: try the others.
  if (probe) u.breaker.release_probe();
  if (wait) {
    out.paced = true;
    earliest = std::min(earliest, now + *wait);
  } else earliest = std::min<time_point>(earliest, now + busy_poll);
  return false;
}

}  // namespace sluice::routing
