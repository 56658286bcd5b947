// Engine pressure: how loaded the GPU inference engine behind an upstream says it is, read from its
// Prometheus endpoint (vLLM: vllm:num_requests_waiting, vllm:kv_cache_usage_perc or the older
// vllm:gpu_cache_usage_perc; llama.cpp: llamacpp:kv_cache_usage_ratio, llamacpp:requests_deferred).
// Parsing and the saturation verdict are pure functions; the scraping loop lives in the proxy.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sluice::routing {

struct engine_sample {
  std::optional<double> waiting;   // requests queued inside the engine (summed over label sets)
  std::optional<double> kv_cache;  // KV-cache usage 0..1 (the highest over label sets)
  std::optional<double> deferred;  // llama.cpp requests deferred for lack of slots
  bool any() const { return waiting || kv_cache || deferred; }
};

struct engine_limits {
  double max_waiting = 0;
  double max_kv_cache = 0.95;
  double max_deferred = 0;
};

// Reads the metrics it knows from a text exposition; unknown lines are ignored, malformed ones too.
engine_sample parse_engine_metrics(std::string_view exposition);

// Why the engine counts as saturated ("" when it does not).
std::string saturation_reason(const engine_sample& s, const engine_limits& l);

}  // namespace sluice::routing
