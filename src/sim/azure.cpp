#include "sim/azure.hpp"

namespace sluice::sim {
namespace {

constexpr std::string_view deployments_prefix = "/openai/deployments/";

// Azure's 401 messages (their error code is the string "401").
constexpr std::string_view missing_key_message =
    "Access denied due to missing subscription key. Make sure to include subscription key when making requests to "
    "an API.";
constexpr std::string_view invalid_key_message =
    "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an "
    "active subscription and use a correct regional API endpoint for your resource.";

bool deployment_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

// The route after /openai/deployments/{d}/.
std::optional<azure_op> deployment_op(std::string_view rest) noexcept {
  if (rest == "chat/completions") return azure_op::chat;
  if (rest == "completions") return azure_op::completion;
  if (rest == "embeddings") return azure_op::embeddings;
  if (rest == "responses") return azure_op::responses;
  return std::nullopt;
}

}  // namespace

bool is_azure_path(std::string_view path) noexcept {
  return path == "/openai" || path.starts_with("/openai/");
}

bool valid_deployment_name(std::string_view name) noexcept {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name)
    if (!deployment_char(c)) return false;
  return true;
}

std::optional<azure_route> parse_azure_path(std::string_view path) noexcept {
  if (path == "/openai/models") return azure_route{azure_op::models, {}};
  if (path == "/openai/responses") return azure_route{azure_op::responses, {}};
  if (!path.starts_with(deployments_prefix)) return std::nullopt;
  const std::string_view rest = path.substr(deployments_prefix.size());
  const auto slash = rest.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  const std::string_view name = rest.substr(0, slash);
  const auto op = deployment_op(rest.substr(slash + 1));
  if (!op || !valid_deployment_name(name)) return std::nullopt;
  return azure_route{*op, name};
}

std::optional<api> completion_api_of(azure_op op) noexcept {
  switch (op) {
    case azure_op::chat:
      return api::chat;
    case azure_op::completion:
      return api::completion;
    case azure_op::responses:
      return api::responses;
    case azure_op::embeddings:
    case azure_op::models:
      return std::nullopt;
  }
  return std::nullopt;
}

std::optional<std::string_view> query_param(std::string_view target, std::string_view name) noexcept {
  const auto q = target.find('?');
  if (q == std::string_view::npos) return std::nullopt;
  std::string_view query = target.substr(q + 1);
  query = query.substr(0, query.find('#'));
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    const auto eq = pair.find('=');
    if (pair.substr(0, eq) == name) return eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1);
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

std::optional<azure_refusal> check_azure_request(std::string_view required_key, std::optional<std::string_view> api_key,
                                                 bool has_authorization, std::string_view target) {
  if (!required_key.empty()) {
    if (!api_key && !has_authorization) return azure_refusal{401, "401", std::string(missing_key_message)};
    if (!api_key || *api_key != required_key) return azure_refusal{401, "401", std::string(invalid_key_message)};
  }
  const auto version = query_param(target, "api-version");
  if (!version || version->empty())
    return azure_refusal{400, "BadRequest", "Missing required query parameter: api-version"};
  return std::nullopt;
}

}  // namespace sluice::sim
