#include "observability/metrics.hpp"

#include <prometheus/check_names.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <stdexcept>

namespace sluice::obs {

std::string_view to_string(route r) noexcept {
  switch (r) {
    case route::chat_completions:
      return "chat_completions";
    case route::completions:
      return "completions";
    case route::responses:
      return "responses";
    case route::models:
      return "models";
    case route::healthz:
      return "healthz";
    case route::readyz:
      return "readyz";
    case route::metrics:
      return "metrics";
    case route::messages:
      return "messages";
    case route::embeddings:
      return "embeddings";
    case route::moderations:
      return "moderations";
    case route::audio: return "audio";
    case route::images: return "images";
    case route::files: return "files";
    case route::uploads: return "uploads";
    case route::batches: return "batches";
    case route::vector_stores: return "vector_stores";
    case route::fine_tuning: return "fine_tuning";
    case route::conversations: return "conversations";
    case route::realtime: return "realtime";
    case route::assistants: return "assistants";
    case route::chatkit: return "chatkit";
    case route::containers: return "containers";
    case route::evals: return "evals";
    case route::skills: return "skills";
    case route::videos: return "videos";
    case route::other:
      return "other";
  }
  return "other";
}

std::string_view to_string(outcome o) noexcept {
  switch (o) {
    case outcome::ok:
      return "ok";
    case outcome::client_error:
      return "client_error";
    case outcome::upstream_error:
      return "upstream_error";
    case outcome::rejected:
      return "rejected";
    case outcome::cancelled:
      return "cancelled";
    case outcome::timeout:
      return "timeout";
    case outcome::internal:
      return "internal";
  }
  return "internal";
}

std::string_view to_string(reject_reason r) noexcept {
  switch (r) {
    case reject_reason::queue_full:
      return "queue_full";
    case reject_reason::queue_timeout:
      return "queue_timeout";
    case reject_reason::memory:
      return "memory";
    case reject_reason::rate_limit:
      return "rate_limit";
    case reject_reason::unauthorized:
      return "unauthorized";
    case reject_reason::draining:
      return "draining";
    case reject_reason::max_connections:
      return "max_connections";
    case reject_reason::bad_request:
      return "bad_request";
    case reject_reason::too_large:
      return "too_large";
    case reject_reason::header_timeout:
      return "header_timeout";
    case reject_reason::bad_framing:
      return "bad_framing";
    case reject_reason::request_line_too_long:
      return "request_line_too_long";
    case reject_reason::too_many_headers:
      return "too_many_headers";
    case reject_reason::limits_unavailable:
      return "limits_unavailable";
    case reject_reason::key_queue_full:
      return "key_queue_full";
    case reject_reason::queue_unavailable:
      return "queue_unavailable";
    case reject_reason::route_disabled:
      return "route_disabled";
    case reject_reason::upload_too_large: return "upload_too_large";
    case reject_reason::stored_objects: return "stored_objects";
  }
  return "bad_request";
}

std::string_view to_string(stage s) noexcept {
  switch (s) {
    case stage::parse:
      return "parse";
    case stage::queue:
      return "queue";
    case stage::ratelimit:
      return "ratelimit";
    case stage::connect:
      return "connect";
    case stage::relay:
      return "relay";
  }
  return "relay";
}

std::string_view to_string(direction d) noexcept {
  return d == direction::prompt ? "prompt" : "completion";
}

std::string_view to_string(byte_direction d) noexcept {
  return d == byte_direction::upstream ? "upstream" : "downstream";
}

namespace {

constexpr std::array<std::string_view, upstream_status_slots> status_labels = {
    "200", "400", "401", "403", "404", "408", "409", "413",   "422",  "429",
    "500", "502", "503", "504", "2xx", "4xx", "5xx", "other", "error"};
constexpr std::size_t slot_2xx = exact_upstream_statuses.size();
constexpr std::size_t slot_4xx = slot_2xx + 1;
constexpr std::size_t slot_5xx = slot_2xx + 2;
constexpr std::size_t slot_other = slot_2xx + 3;
constexpr std::size_t slot_error = slot_2xx + 4;

// Enumerators must be dense and in declaration order: the accessors index arrays by value.
template <class E, std::size_t N>
constexpr bool dense(const std::array<E, N>& all) {
  for (std::size_t i = 0; i < N; ++i)
    if (static_cast<std::size_t>(all[i]) != i) return false;
  return true;
}
static_assert(dense(all_routes) && dense(all_outcomes) && dense(all_reject_reasons) && dense(all_stages) &&
              dense(all_directions) && dense(all_byte_directions));

}  // namespace

std::size_t upstream_status_slot(int s) noexcept {
  // The exact codes are few and fixed; a switch compiles to a jump table or a short search.
  switch (s) {
    case 200:
      return 0;
    case 400:
      return 1;
    case 401:
      return 2;
    case 403:
      return 3;
    case 404:
      return 4;
    case 408:
      return 5;
    case 409:
      return 6;
    case 413:
      return 7;
    case 422:
      return 8;
    case 429:
      return 9;
    case 500:
      return 10;
    case 502:
      return 11;
    case 503:
      return 12;
    case 504:
      return 13;
    case 0:
      return slot_error;
    default:
      break;
  }
  if (s >= 200 && s <= 299) return slot_2xx;
  if (s >= 400 && s <= 499) return slot_4xx;
  if (s >= 500 && s <= 599) return slot_5xx;
  return slot_other;
}

std::string_view upstream_status_label(int http_status) noexcept {
  return status_labels[upstream_status_slot(http_status)];
}

std::string_view upstream_status_slot_label(std::size_t slot) noexcept {
  return slot < status_labels.size() ? status_labels[slot] : status_labels[slot_other];
}

void metrics_registry::add_collectable(std::weak_ptr<const prometheus::Collectable> collectable) {
  std::lock_guard lock(mutex_);
  collectables_.push_back(std::move(collectable));
}

result<void> metrics_registry::add_callback_gauge(std::string name, std::string help, std::function<double()> read) {
  return add_callback({std::move(name), std::move(help), false, std::move(read)});
}

result<void> metrics_registry::add_callback_counter(std::string name, std::string help, std::function<double()> read) {
  return add_callback({std::move(name), std::move(help), true, std::move(read)});
}

result<void> metrics_registry::add_callback(callback_metric m) {
  if (!prometheus::CheckMetricName(m.name))
    return error::make(errc::bad_request, "invalid metric name '" + m.name + "'");
  if (m.is_counter != m.name.ends_with("_total"))
    return error::make(errc::bad_request, "metric '" + m.name + "': counters and only counters end in _total");
  if (!m.read) return error::make(errc::bad_request, "metric '" + m.name + "': no read function");
  if (std::ranges::find(process_collector::metric_names, m.name) != process_collector::metric_names.end())
    return error::make(errc::bad_request, "metric name '" + m.name + "' is taken");
  for (const auto& f : collect())
    if (f.name == m.name) return error::make(errc::bad_request, "metric name '" + m.name + "' is taken");
  std::lock_guard lock(mutex_);
  for (const auto& c : callbacks_)
    if (c->name == m.name) return error::make(errc::bad_request, "metric name '" + m.name + "' is taken");
  callbacks_.push_back(std::make_shared<const callback_metric>(std::move(m)));
  return ok;
}

std::vector<prometheus::MetricFamily> metrics_registry::collect() const {
  std::vector<std::shared_ptr<const prometheus::Collectable>> extras;
  std::vector<std::shared_ptr<const callback_metric>> callbacks;
  {
    // Copy out under the lock, collect outside it: a collectable or callback may take its own locks
    // or even register more metrics without deadlocking against this registry.
    std::lock_guard lock(mutex_);
    std::erase_if(collectables_, [](const auto& w) { return w.expired(); });
    for (const auto& w : collectables_)
      if (auto s = w.lock()) extras.push_back(std::move(s));
    callbacks = callbacks_;
  }

  std::vector<prometheus::MetricFamily> all = process_.Collect();
  for (const auto& c : extras)
    for (auto& f : c->Collect()) all.push_back(std::move(f));
  for (const auto& c : callbacks) {
    prometheus::MetricFamily f;
    f.name = c->name;
    f.help = c->help;
    f.type = c->is_counter ? prometheus::MetricType::Counter : prometheus::MetricType::Gauge;
    prometheus::ClientMetric m;
    (c->is_counter ? m.counter.value : m.gauge.value) = c->read();
    f.metric.push_back(std::move(m));
    all.push_back(std::move(f));
  }

  // Stable sort keeps the first of two same-named families first, so unique() drops the later one:
  // the process metrics and earlier collectables win over a later one that reused a name.
  std::ranges::stable_sort(all, {}, &prometheus::MetricFamily::name);
  auto dup = std::ranges::unique(all, {}, &prometheus::MetricFamily::name);
  all.erase(dup.begin(), dup.end());
  return all;
}

std::string metrics_registry::serialize() const {
  std::ostringstream out;
  prometheus::TextSerializer{}.Serialize(out, collect());
  return out.str();
}

}  // namespace sluice::obs
