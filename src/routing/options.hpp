// routing::options: the upstreams sluice can send a request to, and the policy for choosing among
// them, retrying, breaking circuits, pacing to their rate limits and holding requests while a GPU
// engine behind one is saturated. A frozen value built from config at start-up; read-only after.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/units.hpp"

namespace sluice::config {
class option_table;
}

namespace sluice::routing {

using namespace std::chrono_literals;

// The API an upstream speaks. The gateway's routes are OpenAI's; an Anthropic upstream serves
// /v1/chat/completions translated to and from its Messages API (docs/dialects.md).
// An Azure OpenAI upstream speaks OpenAI's API under deployment paths
// (/openai/deployments/{deployment}/chat/completions?api-version=...) with its key as `api-key`.
enum class upstream_dialect : std::uint8_t { openai, anthropic, azure };

// How an upstream takes its key: `Authorization: Bearer KEY` (OpenAI, most servers) or
// `api-key: KEY` (Azure OpenAI, also its v1 API). An Anthropic upstream always takes x-api-key.
enum class key_header : std::uint8_t { authorization, api_key };

// An Azure deployment's name as its paths take it: 1..64 of A-Z a-z 0-9 . _ -
bool plain_deployment_name(std::string_view s) noexcept;

// One upstream, from an entry of the `upstreams:` config list or from one `--upstream URL` flag.
// The longest `circuit-window` (a circuit's ring of outcomes has a fixed size: circuit_breaker.hpp).
inline constexpr std::uint64_t max_circuit_window = 1024;

struct upstream_spec {
  std::string name;                    // label in metrics and logs; default "upstream-<n>"
  std::string url;                     // http:// or https:// base URL
  std::string key_env;                 // env var with its API key; empty: the global upstream-key-env
  std::uint64_t weight = 1;            // share of traffic relative to the others serving a model
  std::vector<std::string> models;     // the models it serves; empty: every model
  std::uint64_t max_concurrent = 0;    // requests in flight to it at once; 0: no own limit
  std::uint64_t requests_per_minute = 0;  // seeds its request bucket; 0: unknown until headers say
  std::uint64_t tokens_per_minute = 0;    // seeds its token bucket; 0: unknown until headers say
  bool probe = false;                  // actively GET /v1/models every probe-interval
  std::string engine_metrics;          // Prometheus URL of the engine behind it (vLLM, llama.cpp)
  // Sent as OpenAI-Organization / OpenAI-Project with the gateway's key (empty: not sent); the
  // client's own values never go with the gateway's key.
  std::string organization;
  std::string project;
  upstream_dialect dialect = upstream_dialect::openai;  // `dialect: openai | anthropic`
  // Anthropic upstreams: the anthropic-version header sent, and max_tokens for a chat request
  // that names none (the Messages API requires one; chat completions does not).
  std::string anthropic_version = "2023-06-01";
  std::uint64_t default_max_tokens = 4096;
  // `key-header: authorization | api-key`; unset: api-key for an Azure upstream, else authorization.
  std::optional<routing::key_header> key_header_set;
  // Azure upstreams: the deployment serving each model (`deployments: {model: deployment}`); a model
  // not listed is its own deployment's name.
  std::vector<std::pair<std::string, std::string>> deployments;

  routing::key_header key_style() const noexcept {
    return key_header_set.value_or(dialect == upstream_dialect::azure ? routing::key_header::api_key
                                                                     : routing::key_header::authorization);
  }
  // The deployment for `model` (Azure).
  std::string_view deployment_of(std::string_view model) const noexcept;

  bool serves(std::string_view model) const;
  // Registers the per-upstream keys (name, url, key-env, weight, models, ...) on `t`.
  void register_options(config::option_table& t);
};

// What to do with `stream_options.include_usage` on streamed chat/completions requests.
enum class usage_mode : std::uint8_t {
  auto_,   // ask for usage when the upstream has a token bucket to settle, strip it if unasked
  always,  // always ask (token accounting everywhere), strip it if unasked
  never,   // leave requests as the client sent them
};

struct options {
  std::vector<upstream_spec> upstreams;  // from `upstreams:`; `--upstream` flags add plain ones

  // Retries and deadlines.
  std::uint64_t max_attempts = 3;        // attempts per request, the first included
  duration backoff_base = 250ms;         // full jitter: sleep uniform(0, min(cap, base * 2^retry))
  duration backoff_cap = 5s;
  duration request_timeout = 600s;       // one deadline over every attempt and the whole response

  // Circuit breaker (per upstream, shared by every thread).
  std::uint64_t circuit_failures = 5;        // consecutive failures that open it
  double circuit_error_rate = 0.5;           // ...or this share of failures in the window
  std::uint64_t circuit_window = 20;         // outcomes in the error-rate window
  std::uint64_t circuit_min_volume = 10;     // outcomes needed before the rate counts
  duration circuit_open_time = 10s;          // open -> half-open after this (doubles while failing)
  duration circuit_open_time_max = 2min;

  // Pacing and holding.
  duration max_hold = 30s;               // longest a request waits for pacing / a saturated engine
  usage_mode usage = usage_mode::auto_;

  // Health probes and engine pressure.
  duration probe_interval = 10s;         // active /v1/models probe (upstreams with probe: true)
  duration engine_scrape_interval = 1s;  // engine metrics scrape
  double engine_max_waiting = 0;         // vLLM requests waiting above this: saturated
  double engine_max_kv_cache = 0.95;     // KV-cache usage (0..1) at or above this: saturated
  double engine_max_deferred = 0;        // llama.cpp deferred requests above this: saturated
  duration engine_stale_after = 5s;      // a scrape older than this no longer holds requests

  void register_options(config::option_table& t);
  // Adds one plain upstream per `--upstream URL`, names the unnamed, checks every field.
  result<void> finish(const std::vector<std::string>& flag_urls, const std::string& default_key_env);
};

// Parses the `upstreams:` YAML list (used by register_options; exposed for tests).
result<std::vector<upstream_spec>> parse_upstreams_yaml(std::string_view yaml_text);

}  // namespace sluice::routing
