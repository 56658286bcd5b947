// The vocabulary of the gateway's metrics (label enums with their names, the bounded upstream
// status labels) and the registry that exposes every component's metrics, the process metrics and
// callback metrics in the Prometheus text format. Each component owns its own metrics struct
// (component_metrics.hpp). Lifetime: the registry is built once by the composition root.
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
enum class route : std::uint8_t {
  chat_completions,
  completions,
  responses,
  models,
  healthz,
  readyz,
  metrics,
  messages,
  embeddings,
  moderations,
  audio,          // speech, transcriptions, translations (ADR 0027: bodies streamed)
  images,         // generations, edits, variations
  files,          // files and their content
  uploads,        // the Uploads API and its parts
  batches,
  vector_stores,  // vector stores, their files and file batches
  fine_tuning,
  conversations,  // conversations and their items
  realtime,       // GET /v1/realtime: a WebSocket session relayed
  assistants,     // assistants, threads, their runs and messages
  chatkit,
  containers,
  evals,
  skills,
  videos,
  other
};
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
  header_timeout,
  bad_framing,            // a head refused by the HTTP/1.1 framing rules (400/405/501)
  request_line_too_long,  // 414
  too_many_headers,       // 431 by field count
  limits_unavailable,     // 503: the shared limits could not decide (redis-failure-mode closed)
  key_queue_full,         // 503: the client key already has queue-per-key requests waiting
  queue_unavailable,      // 503: the job queue (--queue redis) did not answer
  route_disabled,         // 404: a route the `routes:` allow-list leaves out
  upload_too_large,       // 413: a streamed upload past max-upload-bytes (ADR 0027)
  stored_objects          // 404: a stored-object route where clients would share the gateway's account
};
enum class stage : std::uint8_t { parse, queue, ratelimit, connect, relay };
enum class direction : std::uint8_t { prompt, completion };  // tokens
// Stream bytes: read from upstreams / written to clients.
enum class byte_direction : std::uint8_t { upstream, downstream };

inline constexpr std::array all_routes = {route::chat_completions, route::completions, route::responses, route::models,
                                          route::healthz,          route::readyz,      route::metrics,   route::messages,
                                          route::embeddings,       route::moderations, route::audio,     route::images,
                                          route::files,            route::uploads,     route::batches,   route::vector_stores,
                                          route::fine_tuning,      route::conversations, route::realtime,
                                          route::assistants,       route::chatkit,     route::containers, route::evals,
                                          route::skills,           route::videos,      route::other};
inline constexpr std::array all_outcomes = {outcome::ok,       outcome::client_error, outcome::upstream_error,
                                            outcome::rejected, outcome::cancelled,    outcome::timeout,
                                            outcome::internal};
inline constexpr std::array all_reject_reasons = {reject_reason::queue_full,      reject_reason::queue_timeout,
                                                  reject_reason::memory,          reject_reason::rate_limit,
                                                  reject_reason::unauthorized,    reject_reason::draining,
                                                  reject_reason::max_connections, reject_reason::bad_request,
                                                  reject_reason::too_large,       reject_reason::header_timeout,
                                                  reject_reason::bad_framing,     reject_reason::request_line_too_long,
                                                  reject_reason::too_many_headers,
                                                  reject_reason::limits_unavailable,
                                                  reject_reason::key_queue_full, reject_reason::queue_unavailable,
                                                  reject_reason::route_disabled, reject_reason::upload_too_large,
                                                  reject_reason::stored_objects};
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

// Every name of an enum, for a family's fixed label values; an enumerator as an array index (the
// enums are dense and in declaration order, checked in metrics.cpp).
template <class E, std::size_t N>
std::vector<std::string> label_values(const std::array<E, N>& all) {
  std::vector<std::string> v;
  for (E e : all) v.emplace_back(to_string(e));
  return v;
}
template <class E>
constexpr std::size_t index_of(E e) noexcept {
  return static_cast<std::size_t>(e);
}

// The "status" label of sluice_upstream_requests_total: the exact code for the common ones, a class
// ("2xx", "4xx", "5xx") for the rest, "other" for anything else and "error" for a transport failure
// (status 0). Bounded so that a misbehaving upstream cannot mint series.
inline constexpr std::array<int, 14> exact_upstream_statuses = {200, 400, 401, 403, 404, 408, 409,
                                                                413, 422, 429, 500, 502, 503, 504};
inline constexpr std::size_t upstream_status_slots = exact_upstream_statuses.size() + 5;
std::size_t upstream_status_slot(int http_status) noexcept;
std::string_view upstream_status_label(int http_status) noexcept;
std::string_view upstream_status_slot_label(std::size_t slot) noexcept;  // slot < upstream_status_slots

// Owns the process collector and holds every component's metrics struct (a Collectable, e.g. a
// component_metrics) and callback metric, and renders them all for GET /metrics. serialize() and the add_* calls are thread-safe; they take a
// mutex, which is fine off the hot path (registration at start-up, one scrape every few seconds).
class metrics_registry {
 public:
  static constexpr std::string_view content_type = "text/plain; version=0.0.4; charset=utf-8";

  metrics_registry() = default;
  metrics_registry(const metrics_registry&) = delete;
  metrics_registry& operator=(const metrics_registry&) = delete;

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

  process_collector process_;
  mutable std::mutex mutex_;  // guards collectables_ and callbacks_
  mutable std::vector<std::weak_ptr<const prometheus::Collectable>> collectables_;
  std::vector<std::shared_ptr<const callback_metric>> callbacks_;
};

}  // namespace sluice::obs
