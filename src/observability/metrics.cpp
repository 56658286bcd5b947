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

template <class E, std::size_t N>
std::vector<std::string> label_values(const std::array<E, N>& all) {
  std::vector<std::string> v;
  for (E e : all) v.emplace_back(to_string(e));
  return v;
}

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

gateway_metrics::gateway_metrics(std::vector<std::string> upstream_names)
    : upstream_names_(upstream_names.empty() ? std::vector<std::string>{"default"} : std::move(upstream_names)),
      queue_wait_("sluice_queue_wait_seconds", "Time admitted requests spent waiting in the admission queue.",
                  latency_buckets),
      request_duration_("sluice_request_duration_seconds",
                        "Time from the request head arriving to the last response byte written, by route.",
                        latency_buckets, "route", label_values(all_routes)),
      ttft_("sluice_time_to_first_token_seconds",
            "Time from the request arriving to the first content event written to the client.", latency_buckets),
      inter_token_("sluice_inter_token_seconds", "Time between consecutive content events relayed on a stream.",
                   latency_buckets),
      overhead_("sluice_overhead_seconds",
                "Time the gateway itself spent on a request, by stage (not waiting on the upstream).", overhead_buckets,
                "stage", label_values(all_stages)) {
  {
    std::set<std::string_view> seen;
    for (const auto& n : upstream_names_) {
      if (n.empty()) throw std::invalid_argument("gateway_metrics: empty upstream name");
      if (!seen.insert(n).second) throw std::invalid_argument("gateway_metrics: duplicate upstream name '" + n + "'");
    }
  }
  auto gauge = [this](const char* name, const char* help) {
    return &prometheus::BuildGauge().Name(name).Help(help).Register(registry_).Add({});
  };
  streams_active_ = gauge("sluice_streams_active", "Streaming responses currently being relayed.");
  stream_active_buffers_ = gauge("sluice_stream_active_buffers", "Streams currently holding a relay buffer.");
  stream_buffered_bytes_ = gauge("sluice_stream_buffered_bytes", "Bytes held in stream buffers right now (relay buffers and upstream read buffers).");
  max_streams_ = gauge("sluice_max_streams", "The configured cap on concurrent streams (--max-streams).");
  queue_depth_ = gauge("sluice_queue_depth", "Requests waiting in the admission queue.");
  memory_budget_ = gauge("sluice_memory_budget_bytes", "The configured memory budget for request and stream buffers.");
  memory_used_ = gauge("sluice_memory_used_bytes",
                       "Memory counted against the budget right now (what --shed-threshold is compared with).");
  connections_active_ = gauge("sluice_connections_active", "Open client connections.");
  write_stalls_ = &prometheus::BuildCounter()
                       .Name("sluice_write_stalls_total")
                       .Help("Streams cut because the client accepted no byte for write-stall-timeout "
                             "(their upstream request was closed).")
                       .Register(registry_)
                       .Add({});

  auto& bytes = prometheus::BuildCounter()
                    .Name("sluice_stream_bytes_total")
                    .Help("Stream bytes read from upstreams (upstream) and written to clients (downstream).")
                    .Register(registry_);
  for (auto d : all_byte_directions) stream_bytes_[idx(d)] = &bytes.Add({{"direction", std::string(to_string(d))}});

  auto& rejections = prometheus::BuildCounter()
                         .Name("sluice_rejections_total")
                         .Help("Requests refused before reaching an upstream, by reason.")
                         .Register(registry_);
  for (auto r : all_reject_reasons) rejections_[idx(r)] = &rejections.Add({{"reason", std::string(to_string(r))}});

  auto& requests = prometheus::BuildCounter()
                       .Name("sluice_requests_total")
                       .Help("Requests finished, by route and outcome.")
                       .Register(registry_);
  for (auto r : all_routes)
    for (auto o : all_outcomes)
      requests_[idx(r)][idx(o)] =
          &requests.Add({{"route", std::string(to_string(r))}, {"outcome", std::string(to_string(o))}});

  auto& tokens = prometheus::BuildCounter()
                     .Name("sluice_tokens_total")
                     .Help("Tokens accounted, prompt and completion, as reported by upstreams or counted in relay.")
                     .Register(registry_);
  for (auto d : all_directions) tokens_[idx(d)] = &tokens.Add({{"direction", std::string(to_string(d))}});

  auto& upstream = prometheus::BuildCounter()
                       .Name("sluice_upstream_requests_total")
                       .Help("Requests sent to upstreams, by upstream and response status (error: no response).")
                       .Register(registry_);
  upstream_requests_.resize(upstream_names_.size());
  for (std::size_t u = 0; u < upstream_names_.size(); ++u)
    for (std::size_t s = 0; s < upstream_status_slots; ++s)
      upstream_requests_[u][s] =
          &upstream.Add({{"upstream", upstream_names_[u]}, {"status", std::string(status_labels[s])}});
}

std::vector<prometheus::MetricFamily> gateway_metrics::Collect() const {
  auto out = registry_.Collect();
  for (const histogram_family* h : {&queue_wait_, &request_duration_, &ttft_, &inter_token_, &overhead_})
    out.push_back(h->collect());
  return out;
}

metrics_registry::metrics_registry(std::vector<std::string> upstream_names) : gateway_(std::move(upstream_names)) {}

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
  for (const auto& f : gateway_.Collect())
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

  std::vector<prometheus::MetricFamily> all = gateway_.Collect();
  for (auto& f : process_.Collect()) all.push_back(std::move(f));
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
  // the gateway's and process metrics win over a late collectable that reused a name.
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
