// The route table, and the routes parse() finds beside it: stored responses by id, models by id,
// the streamed routes (streamed_routes.hpp) and the Realtime session's query.
#include "proxy/route_parse.hpp"

#include "proxy/request_id.hpp"
#include "proxy/streamed_routes.hpp"

namespace sluice::proxy {

namespace {

namespace bhttp = boost::beast::http;

// Every path the gateway serves; probes are answered by serve_probe, the rest go upstream.
constexpr route_entry routes[] = {
    {"/v1/chat/completions", obs::route::chat_completions, api::chat_completions, bhttp::verb::post},
    {"/v1/completions", obs::route::completions, api::completions, bhttp::verb::post},
    {"/v1/responses", obs::route::responses, api::responses, bhttp::verb::post},
    {"/v1/embeddings", obs::route::embeddings, api::embeddings, bhttp::verb::post},
    {"/v1/moderations", obs::route::moderations, api::moderations, bhttp::verb::post},
    {"/v1/messages/count_tokens", obs::route::messages, api::count_tokens, bhttp::verb::post},
    {"/v1/models", obs::route::models, api::chat_completions, bhttp::verb::get},
    {"/v1/realtime", obs::route::realtime, api::realtime, bhttp::verb::get},
    {"/healthz", obs::route::healthz, api::chat_completions, bhttp::verb::get},
    {"/readyz", obs::route::readyz, api::chat_completions, bhttp::verb::get},
    {"/metrics", obs::route::metrics, api::chat_completions, bhttp::verb::get},
};

// GET /v1/responses/{id}, POST /v1/responses/{id}/cancel (background.cpp).
constexpr std::string_view stored_prefix = "/v1/responses/";

// A response id as the gateway makes them (resp_ and hex), or any the client could have: letters,
// digits, '_' and '-', at most 64.
bool plausible_response_id(std::string_view id) noexcept {
  if (id.empty() || id.size() > 64) return false;
  for (char c : id)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
  return true;
}

// GET /v1/models/{model}: a model id as the APIs write them (letters, digits and `._:/-`, as in
// `ft:gpt-4o-mini:org::id` or `meta-llama/Llama-3.1-8B`), at most 256 bytes, no `..` step.
constexpr std::string_view models_prefix = "/v1/models/";

bool plausible_model_id(std::string_view id) noexcept {
  if (id.empty() || id.size() > 256 || id.find("..") != std::string_view::npos || id.front() == '/') return false;
  for (char c : id)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
          c == '.' || c == ':' || c == '/'))
      return false;
  return true;
}

// A streamed route (streamed_routes.hpp): its body is not parsed; the path goes on with its query.
std::optional<error> adopt_streamed(request_context& ctx, const http::request& req, const streamed_route& s) {
  ctx.route = s.route;
  ctx.which = api::passthrough;
  ctx.streamed = &s;
  ctx.path = std::string(req.target());
  return std::nullopt;
}

// The model retrieved is the model routed: an upstream that serves it answers.
std::optional<error> parse_model_retrieve(request_context& ctx, const http::request& req, std::string_view id) {
  ctx.route = obs::route::models;
  if (!plausible_model_id(id))
    return error::make(errc::not_found, "Unknown request URL: " + std::string(req.method_string()) + " " +
                                            std::string(models_prefix) + "....");
  if (req.method() == bhttp::verb::delete_) {  // a fine-tuned model of the upstream's account
    ctx.model = std::string(id);
    return adopt_streamed(ctx, req, model_delete_route());
  }
  if (req.method() != bhttp::verb::get)
    return error::make(errc::method_not_allowed,
                       "Method " + std::string(req.method_string()) + " is not allowed here; use GET or DELETE.");
  ctx.model = std::string(id);
  ctx.path = std::string(models_prefix) + std::string(id);
  return std::nullopt;
}

// The upstream of a stored-object route (ADR 0027): the first that gets the client's own key.
// None when client keys are configured (the gateway's key, or none, would go upstream instead):
// clients would share one account's files, batches and stores.
std::optional<std::size_t> objects_upstream(const routing::router& rt, bool client_keys) noexcept {
  if (client_keys) return std::nullopt;
  for (std::size_t i = 0; i < rt.size(); ++i) {
    const auto& u = rt.at(i);
    if (u.authorization.empty() && u.spec.dialect != routing::upstream_dialect::anthropic) return i;
  }
  return std::nullopt;
}

std::string method_of(const http::request& req) { return std::string(req.method_string()); }

std::optional<error> parse_stored(request_context& ctx, const http::request& req, std::string_view rest) {
  ctx.route = obs::route::responses;
  ctx.which = api::responses;
  ctx.path = "/v1/responses";
  constexpr std::string_view cancel_suffix = "/cancel";
  if (rest.ends_with(cancel_suffix)) {
    ctx.response_cancel = true;
    rest.remove_suffix(cancel_suffix.size());
  }
  if (!plausible_response_id(rest))
    return error::make(errc::not_found, "Unknown request URL: " + std::string(req.method_string()) + " " +
                                            std::string(stored_prefix) + "....");
  ctx.response_id = std::string(rest);
  const auto want = ctx.response_cancel ? bhttp::verb::post : bhttp::verb::get;
  if (req.method() != want)
    return error::make(errc::method_not_allowed, "Method " + std::string(req.method_string()) +
                                                     " is not allowed here; use " + std::string(bhttp::to_string(want)) + ".");
  return std::nullopt;
}

}  // namespace

const route_entry* find_route(std::string_view path) noexcept {
  for (const auto& e : routes)
    if (e.path == path) return &e;
  return nullptr;
}

std::string_view path_without_query(const http::request& req) noexcept {
  std::string_view target = req.target();
  if (auto q = target.find('?'); q != std::string_view::npos) target = target.substr(0, q);
  return target;
}

beside_table parse_beside_table(request_context& ctx, const http::request& req, std::string_view target, bool on_table) {
  bool path_known = false;
  if (on_table) {  // a table path with another method: a streamed route, or the table's 405
    if (const auto* s = find_streamed_route(req.method(), target, path_known)) return {true, adopt_streamed(ctx, req, *s)};
    return {};
  }
  if (target.starts_with(stored_prefix)) {
    // The gateway's own ids name the responses it stores; any other is the upstream's (or a
    // stateless route: input_tokens, compact).
    std::string_view id = target.substr(stored_prefix.size());
    id = id.substr(0, id.find('/'));
    if (const auto* s = is_gateway_response_id(id) ? nullptr : find_streamed_route(req.method(), target, path_known))
      return {true, adopt_streamed(ctx, req, *s)};
    return {true, parse_stored(ctx, req, target.substr(stored_prefix.size()))};
  }
  if (target.starts_with(models_prefix)) return {true, parse_model_retrieve(ctx, req, target.substr(models_prefix.size()))};
  if (!target.starts_with("/v1/")) return {};
  if (const auto* s = find_streamed_route(req.method(), target, path_known)) return {true, adopt_streamed(ctx, req, *s)};
  if (path_known)
    return {true, error::make(errc::method_not_allowed, "Method " + method_of(req) + " is not allowed on " + std::string(target) + ".")};
  return {};
}

std::optional<error> adopt_realtime(request_context& ctx, const http::request& req) {
  const std::string_view target = req.target();
  const auto q = target.find('?');
  const std::string_view query = q == std::string_view::npos ? std::string_view{} : target.substr(q + 1);
  std::string_view model;
  for (std::size_t at = 0; at < query.size();) {
    const std::size_t end = std::min(query.find('&', at), query.size());
    if (const auto pair = query.substr(at, end - at); pair.starts_with("model=")) model = pair.substr(6);
    at = end + 1;
  }
  if (!plausible_model_id(model))
    return error::make(errc::bad_request, "A Realtime session names its model: ?model=...", "model");
  ctx.model = std::string(model);
  ctx.path = std::string(target);
  return std::nullopt;
}

std::optional<error> claim_objects_upstream(request_context& ctx, const routing::router& rt, bool client_keys) {
  if (!ctx.streamed || !ctx.streamed->stores) return std::nullopt;
  const auto holder = objects_upstream(rt, client_keys);
  if (!holder)
    return error::make(errc::not_found, "The route " + std::string(ctx.streamed->pattern) +
                                            " acts on objects stored in the upstream's account; this gateway would send "
                                            "them all its own credential, so clients would share them. It is served only "
                                            "where clients send their own upstream key (docs/security.md).");
  ctx.objects_upstream = *holder;
  return std::nullopt;
}

}  // namespace sluice::proxy
