// Traces out of the process (docs/operations.md, "Traces"; ADR 0023): finished spans go into a
// bounded queue and one background thread sends them in batches as OTLP/HTTP JSON to the
// configured collector. Never on a request's path: offer() takes a lock for a move and returns;
// a full queue drops the spans (counted), a collector that is down or slow costs the exporter
// thread's time only (each export bounded by trace-export-timeout; failed batches are counted and
// logged at most once a minute, not retried).
//
//   sluice_trace_spans_total{result}   spans: exported, dropped (queue full), failed (the collector
//                                      refused them or could not be reached)
//   sluice_trace_queue_spans           spans waiting for the exporter thread
//   sluice_trace_queue_spans_limit     trace-queue-spans
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/units.hpp"
#include "observability/component_metrics.hpp"
#include "observability/otlp_json.hpp"
#include "observability/span.hpp"

namespace sluice::config {
class option_table;
}

namespace sluice::obs {

struct trace_options {
  std::string endpoint;               // trace-endpoint: http://HOST:PORT[/path] ("" = no export)
  double sample_ratio = 1.0;          // trace-sample-ratio: traces sluice starts that are exported
  bool sample_errors = true;          // trace-errors: a failed request is exported whatever the ratio
  std::uint64_t queue_spans = 8192;   // trace-queue-spans: the bound of the export queue
  std::uint64_t batch_spans = 512;    // trace-batch-spans: the most spans in one export
  duration export_interval = std::chrono::seconds(1);  // trace-export-interval
  duration export_timeout = std::chrono::seconds(5);   // trace-export-timeout
  std::string service_name = "sluice";                 // trace-service-name: the resource's service.name

  void register_options(config::option_table& t);
  result<void> validate() const;
  bool exporting() const noexcept { return !endpoint.empty(); }
};

class span_exporter {
 public:
  // Sends one encoded batch; an error when the collector did not take it. The default posts to the
  // endpoint; tests may give another.
  using transport = std::function<result<void>(const std::string& body)>;

  span_exporter(const trace_options& opts, otlp_resource resource, transport send = {});
  ~span_exporter();  // sends what is queued (each batch under the timeout), then stops
  span_exporter(const span_exporter&) = delete;
  span_exporter& operator=(const span_exporter&) = delete;

  // Takes a request's spans when the queue has room for all of them, else drops them (counted).
  void offer(std::vector<span_record>&& spans) noexcept;

  class exporter_metrics;
  // For obs::metrics_registry::add_collectable (the registry holds it weakly).
  std::shared_ptr<exporter_metrics> metrics() const noexcept { return metrics_; }

 private:
  void run();
  void send_batch(std::vector<span_record>& batch);

  trace_options opts_;
  otlp_resource resource_;
  transport send_;
  std::shared_ptr<exporter_metrics> metrics_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<span_record> queue_;
  bool stopping_ = false;
  std::chrono::steady_clock::time_point last_failure_log_{};
  std::thread thread_;
};

class span_exporter::exporter_metrics final : public component_metrics {
 public:
  explicit exporter_metrics(const trace_options& opts, const std::function<double()>& queued);
  prometheus::Counter& exported;
  prometheus::Counter& dropped;
  prometheus::Counter& failed;
};

// This process as the resource's service.instance.id: "<host name>:<pid>".
std::string service_instance_id();

// POST `body` (application/json) to an OTLP/HTTP traces endpoint, under `timeout` for the whole
// exchange: ok for a 2xx answer. A URL without a path posts to /v1/traces.
result<void> post_otlp(const std::string& endpoint, const std::string& body, duration timeout);

}  // namespace sluice::obs
