// GET /metrics of the simulator: Prometheus text exposition (format 0.0.4) imitating the GPU
// inference engines a gateway may route by (vLLM and llama.cpp metric names). Pure formatting.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "sim/control.hpp"

namespace sluice::sim {

struct engine_sample {
  std::uint64_t running = 0;    // completion requests in flight now
  std::uint64_t succeeded = 0;  // completion requests answered 2xx to their last byte
  engine_values settable;       // from the control API
  std::array<std::uint64_t, api_count> requests_by_api{};  // completion requests received, by route
  std::uint64_t azure_requests = 0;  // requests to the Azure OpenAI paths (/openai/...), whatever the answer
};

inline constexpr std::string_view metrics_content_type = "text/plain; version=0.0.4";

// Every sample labelled {model_name="<model>"} (escaped as the format requires); the simulator's own
// sim_requests_total also by {route="/v1/messages"} and the other completion routes, and its
// sim_azure_requests_total counts the requests to the Azure OpenAI paths.
std::string engine_metrics_text(std::string_view model, const engine_sample& s);

}  // namespace sluice::sim
