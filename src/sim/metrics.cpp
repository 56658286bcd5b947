#include "sim/metrics.hpp"

#include <charconv>

namespace sluice::sim {
namespace {

// Label values escape backslash, double quote and newline.
std::string label_value(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string number(double v) {
  char buf[32];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc{} ? std::string(buf, p) : "0";
}

void family(std::string& out, std::string_view name, std::string_view type, std::string_view help,
            const std::string& labels, const std::string& value) {
  out.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
  out.append(name).append(labels).append(" ").append(value).append("\n");
}

}  // namespace

std::string engine_metrics_text(std::string_view model, const engine_sample& s) {
  const std::string labels = "{model_name=\"" + label_value(model) + "\"}";
  const std::string running = std::to_string(s.running);
  const std::string kv = number(s.settable.kv_cache_usage);
  std::string out;
  out.reserve(2048);
  family(out, "vllm:num_requests_running", "gauge", "Number of requests currently running on GPU.", labels, running);
  family(out, "vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", labels,
         std::to_string(s.settable.waiting));
  family(out, "vllm:gpu_cache_usage_perc", "gauge", "GPU KV-cache usage. 1 means 100 percent usage.", labels, kv);
  family(out, "vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", labels, kv);
  family(out, "vllm:request_success_total", "counter", "Count of successfully processed requests.", labels,
         std::to_string(s.succeeded));
  family(out, "llamacpp:kv_cache_usage_ratio", "gauge", "KV-cache usage. 1 means 100 percent usage.", labels, kv);
  family(out, "llamacpp:requests_processing", "gauge", "Number of requests processing.", labels, running);
  family(out, "llamacpp:requests_deferred", "gauge", "Number of requests deferred.", labels,
         std::to_string(s.settable.deferred));
  out.append("# HELP sim_requests_total Completion requests received by the simulator, by route.\n");
  out.append("# TYPE sim_requests_total counter\n");
  for (std::size_t i = 0; i < api_count; ++i)
    out.append("sim_requests_total{model_name=\"")
        .append(label_value(model))
        .append("\",route=\"")
        .append(route_of(static_cast<api>(i)))
        .append("\"} ")
        .append(std::to_string(s.requests_by_api[i]))
        .append("\n");
  family(out, "sim_azure_requests_total", "counter",
         "Requests to the Azure OpenAI paths (/openai/...), whatever the answer.", labels,
         std::to_string(s.azure_requests));
  return out;
}

}  // namespace sluice::sim
