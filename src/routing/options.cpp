#include "routing/options.hpp"

#include <algorithm>
#include <charconv>

#include "config/option_table.hpp"
// yaml-cpp 0.7's iterator code trips GCC 12's -Wdangling-pointer false positive when inlined here.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#endif
#include <yaml-cpp/yaml.h>

#include "config/url.hpp"

namespace sluice::routing {

namespace {

result<void> parse_usage_mode(std::string_view v, usage_mode& out) {
  if (v == "auto") out = usage_mode::auto_;
  else if (v == "always") out = usage_mode::always;
  else if (v == "never") out = usage_mode::never;
  else return error::make(errc::bad_request, "expected auto, always or never, got '" + std::string(v) + "'");
  return ok;
}

result<void> parse_dialect(std::string_view v, upstream_dialect& out) {
  if (v == "openai") out = upstream_dialect::openai;
  else if (v == "anthropic") out = upstream_dialect::anthropic;
  else if (v == "azure") out = upstream_dialect::azure;
  else return error::make(errc::bad_request, "expected openai, anthropic or azure, got '" + std::string(v) + "'");
  return ok;
}

result<void> parse_key_header(std::string_view v, std::optional<key_header>& out) {
  if (v == "authorization") out = key_header::authorization;
  else if (v == "api-key") out = key_header::api_key;
  else return error::make(errc::bad_request, "expected authorization or api-key, got '" + std::string(v) + "'");
  return ok;
}

result<void> parse_deployments(const YAML::Node& n, std::vector<std::pair<std::string, std::string>>& out) {
  if (!n.IsMap()) return error::make(errc::bad_request, "expected a map of model: deployment");
  for (const auto& e : n) {
    if (!e.second.IsScalar()) return error::make(errc::bad_request, "expected a deployment name for each model");
    const auto model = e.first.as<std::string>(), deployment = e.second.as<std::string>();
    if (!plain_deployment_name(deployment))
      return error::make(errc::bad_request, "deployment '" + deployment + "': use 1 to 64 of letters, digits, '.', '_', '-'");
    out.emplace_back(model, deployment);
  }
  return ok;
}

result<void> parse_share(std::string_view v, double& out) {
  double x = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || p != v.data() + v.size() || !(x >= 0 && x <= 1))
    return error::make(errc::bad_request, "expected a number from 0 to 1, got '" + std::string(v) + "'");
  out = x;
  return ok;
}

result<upstream_spec> parse_one(const YAML::Node& node, std::size_t index) {
  upstream_spec spec;
  config::option_table t;
  spec.register_options(t);
  auto r = t.apply_yaml_map(node, "upstreams[" + std::to_string(index) + "]");
  if (!r) return std::move(r).err();
  return spec;
}

}  // namespace

bool plain_deployment_name(std::string_view s) noexcept {
  if (s.empty() || s.size() > 64) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

std::string_view upstream_spec::deployment_of(std::string_view model) const noexcept {
  for (const auto& [m, d] : deployments)
    if (m == model) return d;
  return model;
}

bool upstream_spec::serves(std::string_view model) const {
  if (models.empty() || model.empty()) return true;  // "": any upstream (e.g. GET /v1/models)
  return std::find(models.begin(), models.end(), model) != models.end();
}

void upstream_spec::register_options(config::option_table& t) {
  t.add("name", "label in metrics and logs", name)
      .add("url", "base URL, http:// or https://", url)
      .add("key-env", "environment variable holding this upstream's API key", key_env)
      .add("weight", "share of traffic relative to the other upstreams of a model", weight)
      .add_list("models", "models this upstream serves (absent: every model)", models)
      .add("max-concurrent", "requests in flight to this upstream at once (0: no own limit)", max_concurrent)
      .add("requests-per-minute", "this upstream's request rate limit (0: learn from its headers)",
           requests_per_minute)
      .add("tokens-per-minute", "this upstream's token rate limit (0: learn from its headers)", tokens_per_minute)
      .add("probe", "actively probe GET /v1/models every probe-interval", probe)
      .add("organization", "OpenAI-Organization sent with this upstream's key (the client's is never sent with it)",
           organization)
      .add("project", "OpenAI-Project sent with this upstream's key (the client's is never sent with it)", project)
      .add("engine-metrics", "Prometheus URL of the inference engine behind it (vLLM, llama.cpp)",
           engine_metrics)
      .add_custom({"dialect", "the API it speaks: openai, or anthropic (the Messages API, behind /v1/chat/completions)",
                   "openai", [this](std::string_view v) { return parse_dialect(v, dialect); }})
      .add("anthropic-version", "anthropic-version header sent to an anthropic upstream", anthropic_version)
      .add("default-max-tokens", "anthropic upstreams: max_tokens for a chat request that names none",
           default_max_tokens)
      .add_custom({"key-header", "how its key is sent: authorization (Bearer) or api-key (the default for azure)",
                   "authorization",
                   [this](std::string_view v) { return parse_key_header(v, key_header_set); }})
      .add_node("deployments", "azure upstreams: the deployment of each model, {model: deployment} (absent: the model's name)",
                [this](const YAML::Node& n) { return parse_deployments(n, deployments); });
}

result<std::vector<upstream_spec>> parse_upstreams_yaml(std::string_view yaml_text) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    return error::make(errc::bad_request, std::string("upstreams: invalid YAML: ") + e.what());
  }
  std::vector<upstream_spec> out;
  if (!root.IsSequence()) return error::make(errc::bad_request, "upstreams: expected a list of upstreams");
  std::size_t i = 0;
  for (const auto& n : root) {
    auto one = parse_one(n, i++);
    if (!one) return std::move(one).err();
    out.push_back(std::move(*one));
  }
  return out;
}

void options::register_options(config::option_table& t) {
  t.add_node("upstreams", "list of upstreams: name, url, key-env, weight, models, max-concurrent, "
                          "requests-per-minute, tokens-per-minute, probe, engine-metrics, organization, project, "
                          "dialect, anthropic-version, default-max-tokens, key-header, deployments",
             [this](const YAML::Node& n) -> result<void> {
               if (!n.IsSequence()) return error::make(errc::bad_request, "expected a list of upstreams");
               std::size_t i = upstreams.size();
               for (const auto& e : n) {
                 auto one = parse_one(e, i++);
                 if (!one) return std::move(one).err();
                 upstreams.push_back(std::move(*one));
               }
               return ok;
             })
      .add("max-attempts", "upstream attempts per request, the first included", max_attempts)
      .add_duration("retry-backoff-base", "retry backoff: full jitter over min(cap, base * 2^retry)", backoff_base)
      .add_duration("retry-backoff-cap", "largest retry backoff", backoff_cap)
      .add_duration("request-timeout", "one deadline over every attempt and the whole response", request_timeout)
      .add("circuit-failures", "consecutive upstream failures that open its circuit", circuit_failures)
      .add_custom({"circuit-error-rate", "share of failures in the window that opens a circuit", "0.5",
                   [this](std::string_view v) { return parse_share(v, circuit_error_rate); }})
      .add("circuit-window", "outcomes in a circuit's error-rate window", circuit_window)
      .add("circuit-min-volume", "outcomes needed before the error rate counts", circuit_min_volume)
      .add_duration("circuit-open-time", "an open circuit lets a probe through after this (doubling)",
                    circuit_open_time)
      .add_duration("circuit-open-time-max", "longest time a circuit stays open before a probe",
                    circuit_open_time_max)
      .add_duration("max-hold", "longest a request waits for upstream pacing or a saturated engine", max_hold)
      .add_custom({"usage-injection", "ask streams for usage and strip it again: auto, always, never", "auto",
                   [this](std::string_view v) { return parse_usage_mode(v, usage); }})
      .add_duration("probe-interval", "active GET /v1/models probe period (upstreams with probe: true)",
                    probe_interval)
      .add_duration("engine-scrape-interval", "engine metrics scrape period", engine_scrape_interval)
      .add("engine-max-waiting", "vLLM requests waiting above this: the engine is saturated", engine_max_waiting)
      .add_custom({"engine-max-kv-cache", "KV-cache usage (0..1) at or above this: the engine is saturated", "0.95",
                   [this](std::string_view v) { return parse_share(v, engine_max_kv_cache); }})
      .add("engine-max-deferred", "llama.cpp deferred requests above this: the engine is saturated",
           engine_max_deferred)
      .add_duration("engine-stale-after", "an engine scrape older than this no longer holds requests",
                    engine_stale_after);
}

result<void> options::finish(const std::vector<std::string>& flag_urls, const std::string& default_key_env) {
  for (const auto& u : flag_urls) {
    upstream_spec s;
    s.url = u;
    upstreams.push_back(std::move(s));
  }
  if (upstreams.empty()) return error::make(errc::bad_request, "no upstream: give --upstream URL or an upstreams: list");
  if (max_attempts == 0) return error::make(errc::bad_request, "max-attempts: must be at least 1");
  if (circuit_failures == 0) return error::make(errc::bad_request, "circuit-failures: must be at least 1");
  if (circuit_window == 0 || circuit_window > max_circuit_window)
    return error::make(errc::bad_request, "circuit-window: must be 1.." + std::to_string(max_circuit_window));
  if (backoff_cap < backoff_base) return error::make(errc::bad_request, "retry-backoff-cap: must be >= retry-backoff-base");
  if (circuit_open_time_max < circuit_open_time)
    return error::make(errc::bad_request, "circuit-open-time-max: must be >= circuit-open-time");
  for (std::size_t i = 0; i < upstreams.size(); ++i) {
    auto& s = upstreams[i];
    const std::string where = "upstreams[" + std::to_string(i) + "]";
    if (s.name.empty()) s.name = upstreams.size() == 1 ? "default" : "upstream-" + std::to_string(i + 1);
    if (s.key_env.empty()) s.key_env = default_key_env;
    if (s.weight == 0) return error::make(errc::bad_request, where + ": weight: must be at least 1");
    auto u = config::parse_url(s.url, config::query_rule::allowed);
    if (!u) return error::make(errc::bad_request, where + ": url: " + u.err().message);
    if (s.default_max_tokens == 0 || s.default_max_tokens > std::uint64_t{0x7fffffff})
      return error::make(errc::bad_request, where + ": default-max-tokens: must be 1..2147483647");
    if (s.anthropic_version.empty()) return error::make(errc::bad_request, where + ": anthropic-version: must not be empty");
    if (s.dialect == upstream_dialect::anthropic && s.key_header_set)
      return error::make(errc::bad_request, where + ": key-header: an anthropic upstream takes its key as x-api-key");
    if (s.dialect != upstream_dialect::azure && !s.deployments.empty())
      return error::make(errc::bad_request, where + ": deployments: only an upstream of dialect: azure has deployments");
    if (!s.engine_metrics.empty()) {
      auto m = config::parse_url(s.engine_metrics);
      if (!m) return error::make(errc::bad_request, where + ": engine-metrics: " + m.err().message);
    }
    for (std::size_t j = 0; j < i; ++j)
      if (upstreams[j].name == s.name) return error::make(errc::bad_request, where + ": name: '" + s.name + "' is used twice");
    for (char c : s.name)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'))
        return error::make(errc::bad_request, where + ": name: use letters, digits, '-', '_' and '.' only");
  }
  return ok;
}

}  // namespace sluice::routing
