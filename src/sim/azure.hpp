// The simulator's Azure OpenAI face: which /openai/... path names which route and deployment, the
// api-version query rule and the `api-key` header rule, as pure functions of the request's target
// and headers (session.cpp answers with them). No I/O.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "sim/request.hpp"

namespace sluice::sim {

// What an /openai/... path asks for, served as the matching /v1 route.
enum class azure_op { chat, completion, responses, embeddings, models };

struct azure_route {
  azure_op op = azure_op::chat;
  // The deployment named in /openai/deployments/{deployment}/...; empty for /openai/models and
  // /openai/responses (where the body's model names the deployment, as at Azure).
  std::string_view deployment;
};

// The path (no query) is "/openai" or under "/openai/": Azure's rules apply to it, not the /v1 ones.
bool is_azure_path(std::string_view path) noexcept;

// A deployment name the simulator accepts: 1..64 of A-Z a-z 0-9 '.' '_' '-'.
bool valid_deployment_name(std::string_view name) noexcept;

// POST /openai/deployments/{d}/chat/completions, .../completions, .../embeddings, .../responses,
// POST /openai/responses and GET /openai/models (the method is not checked here). Anything else
// under /openai, a bad deployment name included, is nullopt (a 404).
std::optional<azure_route> parse_azure_path(std::string_view path) noexcept;

// The completion api an op is served as, or nullopt (embeddings, models).
std::optional<api> completion_api_of(azure_op op) noexcept;

// The value of query parameter `name` in a request target ("/p?a=1&b=2"), undecoded; nullopt when
// it is absent (a bare `name` with no '=' is present and empty).
std::optional<std::string_view> query_param(std::string_view target, std::string_view name) noexcept;

// A refusal of an /openai/... request before its route: status, Azure's error code, message.
struct azure_refusal {
  unsigned status = 0;
  std::string code;
  std::string message;
};

// With a required key (non-empty), the request must carry `api-key: KEY`: none at all is a 401
// "missing subscription key"; another key, or `Authorization` alone (a Bearer key, as the /v1
// routes take it), a 401 "invalid subscription key". Then the target must carry a non-empty
// `api-version` query parameter (400 BadRequest). Key first, as Azure's gateway checks it first.
std::optional<azure_refusal> check_azure_request(std::string_view required_key, std::optional<std::string_view> api_key,
                                                 bool has_authorization, std::string_view target);

// The 404 of an unknown /openai path: Azure's {"code":"404","message":"Resource not found"}.
inline constexpr std::string_view azure_not_found_code = "404";
inline constexpr std::string_view azure_not_found_message = "Resource not found";

}  // namespace sluice::sim
