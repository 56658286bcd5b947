#include "proxy/adapters/azure_upstream.hpp"

#include <algorithm>
#include <array>

namespace sluice::proxy {

namespace {

// The routes whose requests name a model in their body: Azure serves them per deployment.
constexpr std::array<std::string_view, 3> deployment_routes = {"/v1/chat/completions", "/v1/completions",
                                                                "/v1/embeddings"};

std::string with_query(std::string target, const config::url& u) {
  // A path with a query of its own (a list's ?limit=) takes the upstream's after it.
  if (!u.query.empty()) target.append(1, target.find('?') == std::string::npos ? '?' : '&').append(u.query);
  return target;
}

}  // namespace

result<std::string> upstream_target(const routing::upstream_state& u, std::string_view path, std::string_view model) {
  const auto& base = u.target.base_path;
  if (u.spec.dialect != routing::upstream_dialect::azure) return with_query(base + std::string(path), u.target);
  const std::string_view route = path.starts_with("/v1/") ? path.substr(3) : path;
  if (std::find(deployment_routes.begin(), deployment_routes.end(), path) == deployment_routes.end())
    return with_query(base + std::string(route), u.target);
  const std::string_view deployment = u.spec.deployment_of(model);
  if (!routing::plain_deployment_name(deployment))
    return error::make(errc::not_found, "The model '" + std::string(model) + "' has no Azure deployment on upstream '" +
                                            u.spec.name + "': name one under its deployments.",
                       "model");
  return with_query(base + "/deployments/" + std::string(deployment) + std::string(route), u.target);
}

}  // namespace sluice::proxy
