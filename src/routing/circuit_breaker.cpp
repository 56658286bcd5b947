#include "routing/circuit_breaker.hpp"

#include <algorithm>
#include <string>

namespace sluice::routing {

std::string_view to_string(circuit_state s) noexcept {
  switch (s) {
    case circuit_state::closed: return "closed";
    case circuit_state::half_open: return "half_open";
    case circuit_state::open: return "open";
  }
  return "closed";
}

// --- circuit_core --------------------------------------------------------------------------------

circuit_state circuit_core::state(time_point now) const {
  if (!open) return circuit_state::closed;
  return now >= open_until ? circuit_state::half_open : circuit_state::open;
}

bool circuit_core::available(time_point now) const {
  auto st = state(now);
  return st == circuit_state::closed || (st == circuit_state::half_open && !probe_in_flight);
}

bool circuit_core::try_acquire(time_point now, bool& probe, std::int32_t owner) {
  probe = false;
  switch (state(now)) {
    case circuit_state::closed: return true;
    case circuit_state::open: return false;
    case circuit_state::half_open:
      if (probe_in_flight) return false;
      probe_in_flight = true;
      probe_owner = owner;
      probe = true;
      return true;
  }
  return false;
}

void circuit_core::record(bool failed, const circuit_settings& s) {
  const std::size_t size = std::clamp<std::size_t>(s.window, 1, max_window);
  if (size != window_size) {  // first use, or a reload changed the window: start it again
    window.reset();
    window_fill = window_pos = window_failures = 0;
    window_size = size;
  }
  if (window_fill == size) {
    if (window[window_pos]) --window_failures;
  } else {
    ++window_fill;
  }
  window[window_pos] = failed;
  if (failed) ++window_failures;
  window_pos = (window_pos + 1) % size;
}

void circuit_core::open_now(time_point now, const circuit_settings& s) {
  if (next_open_time <= duration::zero()) next_open_time = s.open_time;
  open = true;
  open_until = now + next_open_time;
  next_open_time = std::min<duration>(next_open_time * 2, s.open_time_max);
}

void circuit_core::on_success(bool probe, const circuit_settings& s) {
  if (probe) {
    // The probe came back healthy: close, forget the failures that opened it.
    release_probe();
    open = false;
    next_open_time = s.open_time;
    window.reset();
    window_fill = window_pos = window_failures = 0;
  }
  consecutive = 0;
  if (!open) record(false, s);
}

bool circuit_core::on_failure(time_point now, bool probe, const circuit_settings& s) {
  if (probe) {
    release_probe();
    open_now(now, s);  // still failing: open again, for longer
    return true;
  }
  if (open) return false;  // a request sent before it opened: already counted as open
  ++consecutive;
  record(true, s);
  const bool by_count = consecutive >= s.failures;
  const bool by_rate = s.error_rate > 0 && window_fill >= s.min_volume &&
                       static_cast<double>(window_failures) >= s.error_rate * static_cast<double>(window_fill);
  if (!by_count && !by_rate) return false;
  consecutive = 0;
  open_now(now, s);
  return true;
}

void circuit_core::release_probe() {
  probe_in_flight = false;
  probe_owner = no_owner;
}

// --- circuit_breaker -----------------------------------------------------------------------------

circuit_breaker::circuit_breaker(circuit_settings s) : s_(s) { core_.next_open_time = s.open_time; }

result<pod_circuit_seat> attach_pod_circuit(const runtime::row_identity& upstream, pod_circuits& table,
                                            std::size_t worker, std::uint32_t generation) {
  auto row = table.attach_or_error(upstream, worker, generation, [](pod_circuit_row&) {}, [](pod_circuit_row&) {},
                                   "upstreams");
  if (!row) return std::move(row).err();
  return pod_circuit_seat{*row, worker};
}

circuit_breaker::circuit_breaker(circuit_settings s, pod_circuit_seat seat)
    : s_(s), shared_(seat.row), worker_(static_cast<std::int32_t>(seat.worker)) {}

template <class F>
auto circuit_breaker::with_core(F&& f) const {
  if (shared_ != nullptr) {
    pod_circuits::guard g(*shared_);
    return f(g->core);
  }
  std::lock_guard lk(mu_);
  return f(core_);
}

circuit_state circuit_breaker::state(time_point now) const {
  return with_core([&](circuit_core& c) { return c.state(now); });
}

bool circuit_breaker::available(time_point now) const {
  return with_core([&](circuit_core& c) { return c.available(now); });
}

bool circuit_breaker::try_acquire(time_point now, bool& probe) {
  return with_core([&](circuit_core& c) { return c.try_acquire(now, probe, worker_); });
}

void circuit_breaker::on_success(bool probe) {
  with_core([&](circuit_core& c) { c.on_success(probe, s_); });
}

void circuit_breaker::on_failure(time_point now, bool probe) {
  const bool opened = with_core([&](circuit_core& c) { return c.on_failure(now, probe, s_); });
  if (opened) {
    std::lock_guard lk(mu_);
    ++opened_;
  }
}

void circuit_breaker::release_probe() {
  with_core([](circuit_core& c) { c.release_probe(); });
}

time_point circuit_breaker::retry_at() const {
  return with_core([](circuit_core& c) { return c.open_until; });
}

std::uint64_t circuit_breaker::times_opened() const {
  std::lock_guard lk(mu_);
  return opened_;
}

}  // namespace sluice::routing
