// circuit_breaker: passive health of one upstream, shared by every worker thread. Closed lets
// everything through; enough consecutive failures, or a high failure share over a window of recent
// outcomes, open it; after an open time (doubling while the upstream keeps failing) it is half-open
// and lets exactly one probe request through, whose outcome closes or re-opens it. The clock is a
// parameter, so tests drive it without sleeping. Thread-safe (one small mutex).
//
// In a worker process of `sluice serve --processes N` the state is the pod's (docs/processes.md):
// it lives in a row of the pod's shared segment (pod_circuits, named by the upstream) under the
// row's process-shared lock, so failures seen by any worker open the circuit for all, and one
// worker's probe is the pod's one probe. A worker that dies holding the probe gives it back
// (pod_circuits::detach_worker, by the supervisor).
#pragma once

#include <bitset>
#include <chrono>
#include <cstdint>
#include <mutex>

#include "core/units.hpp"
#include "routing/options.hpp"
#include "runtime/pod_table.hpp"

namespace sluice::routing {

using steady_clock = std::chrono::steady_clock;
using time_point = steady_clock::time_point;

enum class circuit_state : std::uint8_t { closed = 0, half_open = 1, open = 2 };
std::string_view to_string(circuit_state s) noexcept;

struct circuit_settings {
  std::uint64_t failures = 5;
  double error_rate = 0.5;
  std::uint64_t window = 20;  // 1..circuit_core::max_window
  std::uint64_t min_volume = 10;
  duration open_time = std::chrono::seconds(10);
  duration open_time_max = std::chrono::minutes(2);
};

// A circuit's state as plain values (the window a fixed ring), with no lock of its own: the
// breaker keeps it under its mutex, or a pod's processes in shared memory under theirs.
struct circuit_core {
  static constexpr std::size_t max_window = max_circuit_window;
  static constexpr std::int32_t no_owner = -1;

  circuit_state state(time_point now) const;
  bool available(time_point now) const;
  bool try_acquire(time_point now, bool& probe, std::int32_t owner);
  void on_success(bool probe, const circuit_settings& s);
  // True when this failure opened the circuit.
  bool on_failure(time_point now, bool probe, const circuit_settings& s);
  void release_probe();

  bool open = false;  // open or half-open (half-open = open and now >= open_until)
  bool probe_in_flight = false;
  std::int32_t probe_owner = no_owner;  // the pod's worker row that holds the probe
  time_point open_until{};
  duration next_open_time{};  // zero: not yet opened (the settings' open_time then)
  std::uint64_t consecutive = 0;
  std::bitset<max_window> window;  // ring of recent outcomes (set = failure)
  std::size_t window_size = 0;     // the settings' window it was kept for (a reload may change it)
  std::size_t window_pos = 0;
  std::size_t window_fill = 0;
  std::size_t window_failures = 0;

 private:
  void open_now(time_point now, const circuit_settings& s);
  void record(bool failed, const circuit_settings& s);
};

// One upstream's circuit for a pod's processes.
struct pod_circuit_row {
  circuit_core core;
  void repair() noexcept {}
  // Worker row w's process has ended: a probe it held is free again.
  void release_worker(std::size_t w) noexcept {
    if (core.probe_in_flight && core.probe_owner == static_cast<std::int32_t>(w)) core.release_probe();
  }
};
inline constexpr std::size_t pod_circuit_rows = 256;
using pod_circuits = runtime::pod_table<pod_circuit_row, pod_circuit_rows>;

// A worker's place in the pod's circuit of one upstream: its row, attached, and the worker row.
struct pod_circuit_seat {
  pod_circuits::row* row;
  std::size_t worker;
};

// Attaches worker row `worker` of `generation` to the circuit row of `upstream` in `table`; an
// error when the table is full or `worker` is not a worker row (runtime::is_pod_worker_row).
result<pod_circuit_seat> attach_pod_circuit(const runtime::row_identity& upstream, pod_circuits& table,
                                            std::size_t worker, std::uint32_t generation);

class circuit_breaker {
 public:
  explicit circuit_breaker(circuit_settings s);
  // The pod's circuit for this upstream, at an attached seat (attach_pod_circuit).
  circuit_breaker(circuit_settings s, pod_circuit_seat seat);

  // Whether a request could be sent now (closed, or half-open with its probe slot free).
  bool available(time_point now) const;
  // Takes the right to send one request: always when closed; the single probe slot when half-open.
  // `probe` tells the caller it holds the probe slot (report its outcome, or release it).
  bool try_acquire(time_point now, bool& probe);
  void on_success(bool probe);
  void on_failure(time_point now, bool probe);
  // A probe that ended without an outcome (the client left): the slot is free again.
  void release_probe();

  circuit_state state(time_point now) const;
  // When an open circuit turns half-open (meaningful while open).
  time_point retry_at() const;
  // Times this process's outcomes opened it (a pod's sum over its processes is the pod's count).
  std::uint64_t times_opened() const;

 private:
  template <class F>
  auto with_core(F&& f) const;

  circuit_settings s_;
  mutable std::mutex mu_;
  mutable circuit_core core_;                // the state, unless it is the pod's
  pod_circuits::row* shared_ = nullptr;      // the pod's state
  std::int32_t worker_ = circuit_core::no_owner;
  std::uint64_t opened_ = 0;  // under mu_
};

}  // namespace sluice::routing
