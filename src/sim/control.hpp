// Runtime control of the simulator (POST /sim/control, server::control): engine values for
// GET /metrics and a FIFO script of per-request overrides. parse_control is pure; control_state is
// shared by every worker thread and the owner (one mutex; an atomic size lets the hot path skip it
// while the script is empty).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "sim/options.hpp"
#include "sim/request.hpp"

namespace sluice::sim {

// Most script entries held at once; a POST that would pass it is refused whole.
inline constexpr std::size_t max_script_entries = 10'000;

// The settable /metrics values (a real count of running requests comes from the counters).
struct engine_values {
  std::uint64_t waiting = 0;    // vllm:num_requests_waiting
  double kv_cache_usage = 0;    // 0..1: vllm:gpu_cache_usage_perc, vllm:kv_cache_usage_perc, llamacpp:kv_cache_usage_ratio
  std::uint64_t deferred = 0;   // llamacpp:requests_deferred
  // A paused engine: every stream that opens holds after its head, before its first token, until
  // the engine resumes (a stalled engine, and a barrier that makes streams overlap for certain).
  bool paused = false;
};

// One script entry: each field is the text of the x-sim-* header it stands for; empty = not given.
struct script_entry {
  std::string tokens, token_size, ttft, token_delay, header_delay, retry_after, fault, fault_after, status, content, tool_call;
  // `content` given as an array: one text per choice (n > 1); `content` then holds the first.
  std::vector<std::string> choice_contents;
  // Each given field replaces the request's own header (views into this entry: it must outlive h).
  void apply(header_overrides& h) const;
};

// A parsed, validated control body.
struct control_update {
  bool clear = false;  // applied before the other fields
  std::optional<std::uint64_t> waiting, deferred;
  std::optional<double> kv_cache_usage;
  std::optional<bool> paused;
  std::vector<script_entry> script;
};

// Parses a control body; the error (bad_request) names the field, e.g. "script[2].fault: ...", and
// carries it as `param`. Script entries are checked against `opts` as their headers would be.
result<control_update> parse_control(std::string_view body, const options& opts);

class control_state {
 public:
  // Applies an update atomically: clear, engine values, then the script (refused whole, nothing
  // changed, if it would hold more than max_script_entries).
  result<void> apply(control_update u);
  // The front entry, if any: each completion request takes one.
  std::optional<script_entry> pop();
  std::size_t script_remaining() const noexcept { return size_.load(std::memory_order_acquire); }
  engine_values engine() const;
  // engine().paused without the lock (the streams' hot path).
  bool paused() const noexcept { return paused_.load(std::memory_order_acquire); }
  // {"script_remaining":N,"engine":{"waiting":..,"kv_cache_usage":..,"deferred":..}}
  std::string to_json() const;

 private:
  mutable std::mutex mu_;
  std::deque<script_entry> script_;
  std::atomic<std::size_t> size_{0};  // script_.size(), readable without the lock
  std::atomic<bool> paused_{false};   // engine_.paused, readable without the lock
  engine_values engine_;
};

}  // namespace sluice::sim
