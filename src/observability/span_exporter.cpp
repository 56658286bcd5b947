#include "observability/span_exporter.hpp"

#include "config/option_table.hpp"
#include "config/url.hpp"
#include "observability/log.hpp"

#include <unistd.h>

#include <climits>

namespace sluice::obs {

void trace_options::register_options(config::option_table& t) {
  t.add("trace-endpoint", "OTLP/HTTP collector for traces, http://HOST:PORT[/path] (no path: /v1/traces; empty: no export)",
        endpoint)
      .add("trace-sample-ratio", "share of the traces sluice starts that are exported, 0 to 1 (a client's traceparent decides its own)",
           sample_ratio)
      .add("trace-errors", "export a request that failed (5xx, cut short, timed out) whatever the sampling", sample_errors)
      .add("trace-queue-spans", "spans waiting for export at most; past it a request's spans are dropped (counted)",
           queue_spans)
      .add("trace-batch-spans", "spans in one export at most", batch_spans)
      .add_duration("trace-export-interval", "how often queued spans are sent", export_interval)
      .add_duration("trace-export-timeout", "the longest one export may take", export_timeout)
      .add("trace-service-name", "service.name of the exported spans' resource", service_name);
}

result<void> trace_options::validate() const {
  if (!(sample_ratio >= 0 && sample_ratio <= 1)) return error::make(errc::bad_request, "trace-sample-ratio must be from 0 to 1");
  if (queue_spans == 0 || batch_spans == 0 || batch_spans > queue_spans)
    return error::make(errc::bad_request, "trace-batch-spans must be at least 1 and at most trace-queue-spans");
  if (queue_spans > 1'000'000) return error::make(errc::bad_request, "trace-queue-spans must be at most 1000000");
  if (export_interval <= duration::zero() || export_timeout <= duration::zero())
    return error::make(errc::bad_request, "trace-export-interval and trace-export-timeout must be positive");
  if (service_name.empty()) return error::make(errc::bad_request, "trace-service-name must not be empty");
  if (endpoint.empty()) return ok;
  auto u = config::parse_url(endpoint);
  if (!u) return error::make(errc::bad_request, "trace-endpoint: " + u.err().message);
  if (u->tls) return error::make(errc::bad_request, "trace-endpoint: only http:// collectors are supported (a local agent or sidecar)");
  return ok;
}

std::string service_instance_id() {
  char host[HOST_NAME_MAX + 1] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return std::string(host) + ":" + std::to_string(::getpid());
}

span_exporter::exporter_metrics::exporter_metrics(const trace_options& opts, const std::function<double()>& queued)
    : exported(counter_family("sluice_trace_spans_total", "Spans by what became of them: exported, dropped (queue full), failed (collector).")
                   .Add({{"result", "exported"}})),
      dropped(counter_family("sluice_trace_spans_total", "").Add({{"result", "dropped"}})),
      failed(counter_family("sluice_trace_spans_total", "").Add({{"result", "failed"}})) {
  scraped("sluice_trace_queue_spans", "Spans waiting for the exporter.", {}, queued);
  const double limit = static_cast<double>(opts.queue_spans);
  scraped("sluice_trace_queue_spans_limit", "trace-queue-spans.", {}, [limit] { return limit; });
}

span_exporter::span_exporter(const trace_options& opts, otlp_resource resource, transport send)
    : opts_(opts), resource_(std::move(resource)), send_(std::move(send)) {
  if (!send_) {
    send_ = [endpoint = opts_.endpoint, timeout = opts_.export_timeout](const std::string& body) {
      return post_otlp(endpoint, body, timeout);
    };
  }
  metrics_ = std::make_shared<exporter_metrics>(opts_, [this] {
    std::lock_guard lock(mu_);
    return static_cast<double>(queue_.size());
  });
  thread_ = std::thread([this] { run(); });
}

span_exporter::~span_exporter() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void span_exporter::offer(std::vector<span_record>&& spans) noexcept {
  if (spans.empty()) return;
  bool full = false, wake = false;
  {
    std::lock_guard lock(mu_);
    if (queue_.size() + spans.size() > opts_.queue_spans) {
      full = true;
    } else {
      for (auto& s : spans) queue_.push_back(std::move(s));
      wake = queue_.size() >= opts_.batch_spans;
    }
  }
  if (full) metrics_->dropped.Increment(static_cast<double>(spans.size()));
  if (wake) wake_.notify_one();
}

void span_exporter::run() {
  std::unique_lock lock(mu_);
  while (true) {
    wake_.wait_for(lock, opts_.export_interval, [this] { return stopping_ || queue_.size() >= opts_.batch_spans; });
    // Everything queued goes, a batch at a time; on stop too (each batch under the timeout).
    while (!queue_.empty()) {
      std::vector<span_record> batch;
      const std::size_t n = std::min<std::size_t>(queue_.size(), opts_.batch_spans);
      batch.reserve(n);
      for (std::size_t i = 0; i < n; ++i) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      lock.unlock();
      send_batch(batch);
      lock.lock();
    }
    if (stopping_) return;
  }
}

void span_exporter::send_batch(std::vector<span_record>& batch) {
  const auto n = static_cast<double>(batch.size());
  auto sent = send_(encode_otlp_json(batch, resource_));
  if (sent) {
    metrics_->exported.Increment(n);
    return;
  }
  metrics_->failed.Increment(n);
  const auto now = std::chrono::steady_clock::now();
  if (now - last_failure_log_ >= std::chrono::minutes(1)) {
    last_failure_log_ = now;
    log_warn("trace export failed: the spans are dropped (sluice_trace_spans_total{result=\"failed\"})",
             {{"endpoint", std::string_view(opts_.endpoint)}, {"spans", batch.size()}, {"error", std::string_view(sent.err().message)}});
  }
}

}  // namespace sluice::obs
