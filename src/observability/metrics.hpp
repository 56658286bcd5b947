// The gateway's own metrics in one struct, and the registry that exposes them (with the process
// metrics and whatever other components add) in the Prometheus text format. Hot-path accessors are
// O(1), lock-free and callable from any thread; every series is created in the constructor.
// Lifetime: metrics_registry is built once by the composition root and outlives every user.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "observability/histogram.hpp"
#include "observability/process_collector.hpp"

namespace sluice::obs {

// Label values come only from these enums (and from the configured upstream names), so every
// label's cardinality is known when the process starts.
enum class route : std::uint8_t { chat_completions, completions, responses, models, healthz, readyz, metrics, other };
enum class outcome : std::uint8_t { ok, client_error, upstream_error, rejected, cancelled, timeout, internal };
enum class reject_reason : std::uint8_t {
  queue_full,
  queue_timeout,
  memory,
  rate_limit,
  unauthorized,
  draining,
  max_connections,
  bad_request,
  too_large,
  header_timeout
};
enum class stage : std::uint8_t { parse, queue, ratelimit, connect, relay };
enum class direction : std::uint8_t { prompt, completion };  // tokens
// Stream bytes: read from upstreams / written to clients.
enum class byte_direction : std::uint8_t { upstream, downstream };

inline constexpr std::array all_routes = {route::chat_completions, route::completions, route::responses, route::models,
                                          route::healthz,          route::readyz,      route::metrics,   route::other};
inline constexpr std::array all_outcomes = {outcome::ok,       outcome::client_error, outcome::upstream_error,
                                            outcome::rejected, outcome::cancelled,    outcome::timeout,
                                            outcome::internal};
inline constexpr std::array all_reject_reasons = {reject_reason::queue_full,      reject_reason::queue_timeout,
                                                  reject_reason::memory,          reject_reason::rate_limit,
                                                  reject_reason::unauthorized,    reject_reason::draining,
                                                  reject_reason::max_connections, reject_reason::bad_request,
                                                  reject_reason::too_large,       reject_reason::header_timeout};
inline constexpr std::array all_stages = {stage::parse, stage::queue, stage::ratelimit, stage::connect, stage::relay};
inline constexpr std::array all_directions = {direction::prompt, direction::completion};
inline constexpr std::array all_byte_directions = {byte_direction::upstream, byte_direction::downstream};

// The label value of each enumerator: its own name.
std::string_view to_string(route r) noexcept;
std::string_view to_string(outcome o) noexcept;
std::string_view to_string(reject_reason r) noexcept;
std::string_view to_string(stage s) noexcept;
std::string_view to_string(direction d) noexcept;
std::string_view to_string(byte_direction d) noexcept;

// The "status" label of sluice_upstream_requests_total: the exact code for the common ones, a class
// ("2xx", "4xx", "5xx") for the rest, "other" for anything else and "error" for a transport failure
// (status 0). Bounded so that a misbehaving upstream cannot mint series.
inline constexpr std::array<int, 14> exact_upstream_statuses = {200, 400, 401, 403, 404, 408, 409,
                                                                413, 422, 429, 500, 502, 503, 504};
inline constexpr std::size_t upstream_status_slots = exact_upstream_statuses.size() + 5;
std::size_t upstream_status_slot(int http_status) noexcept;
std::string_view upstream_status_label(int http_status) noexcept;

// Everything the gateway itself records. A Collectable: Collect() yields all of its families.
// Counters and gauges are prometheus-cpp's (atomic); histograms are obs::histogram (lock-free).
class gateway_metrics final : public prometheus::Collectable {
 public:
  // upstream_names: the configured upstreams, in config order; upstream_requests_total takes an
  // index into it. Empty means {"default"}. Duplicate or empty names are a caller bug (config
  // validation rejects them first) and throw std::invalid_argument.
  explicit gateway_metrics(std::vector<std::string> upstream_names = {"default"});
  gateway_metrics(const gateway_metrics&) = delete;
  gateway_metrics& operator=(const gateway_metrics&) = delete;

  // Streams and buffers.
  prometheus::Gauge& streams_active() noexcept { return *streams_active_; }
  prometheus::Gauge& stream_active_buffers() noexcept { return *stream_active_buffers_; }
  prometheus::Gauge& stream_buffered_bytes() noexcept { return *stream_buffered_bytes_; }
  prometheus::Counter& stream_bytes_total(byte_direction d) noexcept { return *stream_bytes_[idx(d)]; }
  prometheus::Gauge& max_streams() noexcept { return *max_streams_; }  // the configured cap, set once
  // Streams cut because their client accepted no byte for write-stall-timeout.
  prometheus::Counter& write_stalls_total() noexcept { return *write_stalls_; }

  // Admission.
  prometheus::Gauge& queue_depth() noexcept { return *queue_depth_; }
  histogram& queue_wait_seconds() noexcept { return queue_wait_.at(0); }
  prometheus::Counter& rejections_total(reject_reason r) noexcept { return *rejections_[idx(r)]; }
  prometheus::Gauge& memory_budget_bytes() noexcept { return *memory_budget_; }
  prometheus::Gauge& memory_used_bytes() noexcept { return *memory_used_; }
  prometheus::Gauge& connections_active() noexcept { return *connections_active_; }

  // Requests and latency.
  prometheus::Counter& requests_total(route r, outcome o) noexcept { return *requests_[idx(r)][idx(o)]; }
  histogram& request_duration_seconds(route r) noexcept { return request_duration_.at(idx(r)); }
  histogram& time_to_first_token_seconds() noexcept { return ttft_.at(0); }
  histogram& inter_token_seconds() noexcept { return inter_token_.at(0); }
  histogram& overhead_seconds(stage s) noexcept { return overhead_.at(idx(s)); }
  prometheus::Counter& tokens_total(direction d) noexcept { return *tokens_[idx(d)]; }

  // Upstreams. An index past the configured names is a caller bug: throws std::out_of_range.
  prometheus::Counter& upstream_requests_total(std::size_t upstream_index, int http_status) {
    return *upstream_requests_.at(upstream_index)[upstream_status_slot(http_status)];
  }

  const std::vector<std::string>& upstream_names() const noexcept { return upstream_names_; }

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  template <class E>
  static constexpr std::size_t idx(E e) noexcept {
    return static_cast<std::size_t>(e);
  }

  std::vector<std::string> upstream_names_;
  prometheus::Registry registry_;  // owns the counter and gauge families; only this struct adds to it

  prometheus::Gauge* streams_active_ = nullptr;
  prometheus::Gauge* stream_active_buffers_ = nullptr;
  prometheus::Gauge* stream_buffered_bytes_ = nullptr;
  prometheus::Gauge* max_streams_ = nullptr;
  prometheus::Gauge* queue_depth_ = nullptr;
  prometheus::Gauge* memory_budget_ = nullptr;
  prometheus::Gauge* memory_used_ = nullptr;
  prometheus::Gauge* connections_active_ = nullptr;
  prometheus::Counter* write_stalls_ = nullptr;
  std::array<prometheus::Counter*, all_byte_directions.size()> stream_bytes_{};
  std::array<prometheus::Counter*, all_reject_reasons.size()> rejections_{};
  std::array<std::array<prometheus::Counter*, all_outcomes.size()>, all_routes.size()> requests_{};
  std::array<prometheus::Counter*, all_directions.size()> tokens_{};
  std::vector<std::array<prometheus::Counter*, upstream_status_slots>> upstream_requests_;

  histogram_family queue_wait_;
  histogram_family request_duration_;
  histogram_family ttft_;
  histogram_family inter_token_;
  histogram_family overhead_;
};

// Owns the gateway metrics, the process collector and any collectables other components add, and
// renders them all for GET /metrics. serialize() and the add_* calls are thread-safe; they take a
// mutex, which is fine off the hot path (registration at start-up, one scrape every few seconds).
class metrics_registry {
 public:
  static constexpr std::string_view content_type = "text/plain; version=0.0.4; charset=utf-8";

  explicit metrics_registry(std::vector<std::string> upstream_names = {"default"});
  metrics_registry(const metrics_registry&) = delete;
  metrics_registry& operator=(const metrics_registry&) = delete;

  gateway_metrics& gateway() noexcept { return gateway_; }

  // A component's own metrics struct (itself a Collectable). Held weakly: the component keeps its
  // lifetime and simply drops out of the exposition once destroyed. Family names must be unique
  // across the registry; a family whose name was already collected is left out of the output.
  void add_collectable(std::weak_ptr<const prometheus::Collectable> collectable);

  // A metric read at scrape time from `read`, which runs on the scraping thread and must be
  // thread-safe and stay callable for the registry's lifetime. Fails on an invalid or taken name.
  result<void> add_callback_gauge(std::string name, std::string help, std::function<double()> read);
  result<void> add_callback_counter(std::string name, std::string help, std::function<double()> read);

  // Every family, sorted by name, duplicates dropped.
  std::vector<prometheus::MetricFamily> collect() const;
  // Prometheus text exposition format 0.0.4.
  std::string serialize() const;

 private:
  struct callback_metric {
    std::string name;
    std::string help;
    bool is_counter = false;
    std::function<double()> read;
  };
  result<void> add_callback(callback_metric m);

  gateway_metrics gateway_;
  process_collector process_;
  mutable std::mutex mutex_;  // guards collectables_ and callbacks_
  mutable std::vector<std::weak_ptr<const prometheus::Collectable>> collectables_;
  std::vector<std::shared_ptr<const callback_metric>> callbacks_;
};

}  // namespace sluice::obs
