// An Azure OpenAI upstream (`dialect: azure`, docs/routing.md "Azure OpenAI"): OpenAI's API under
// deployment paths, its api-version as the URL's query, its key as `api-key`. Only the request's
// address and credential differ from an OpenAI upstream's; bodies and answers are OpenAI's own.
// Pure.
#pragma once

#include <string>
#include <string_view>

#include "core/error.hpp"
#include "routing/router.hpp"

namespace sluice::proxy {

// The target of a request to the gateway route `path` (/v1/...) on upstream `u`: for an Azure
// upstream, a route whose body names the model (chat completions, completions, embeddings) goes to
// base/deployments/{the model's deployment}/{route without /v1}, any other to base/{route without
// /v1}; for any other upstream base + path. The URL's query (api-version) follows. A 404 when the
// model has no deployment name an Azure path can carry.
result<std::string> upstream_target(const routing::upstream_state& u, std::string_view path, std::string_view model);

}  // namespace sluice::proxy
