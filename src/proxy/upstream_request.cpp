#include "proxy/upstream_request.hpp"

#include <cctype>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "proxy/adapters/anthropic_upstream.hpp"
#include "proxy/adapters/azure_upstream.hpp"

namespace sluice::proxy {

namespace json = boost::json;
namespace bhttp = boost::beast::http;

namespace {
bool starts_with_ci(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  return true;
}
bool iequals(std::string_view a, std::string_view b) { return a.size() == b.size() && starts_with_ci(a, b); }
}  // namespace

namespace {
// `Authorization: Bearer KEY` (whoever's key it is) as `api-key: KEY`, as Azure OpenAI takes it.
void bearer_to_api_key(upstream::request& req) {
  auto it = req.find(bhttp::field::authorization);
  if (it == req.end()) return;
  std::string_view v = it->value();
  if (v.substr(0, 7) == "Bearer ") v.remove_prefix(7);
  req.set("api-key", std::string(v));
  req.erase(bhttp::field::authorization);
}
}  // namespace

bool forwardable(std::string_view name) {
  // The allow-list (docs/routing.md, "What goes upstream"): OpenAI's own headers and custom x-
  // headers, less the ones that carry credentials, identity sluice sets itself, or sluice's controls.
  // OpenAI-Organization and OpenAI-Project are decided per attempt (prepare_attempt).
  if (iequals(name, "openai-organization") || iequals(name, "openai-project")) return false;
  if (starts_with_ci(name, "x-sluice-") || iequals(name, "x-request-id") || starts_with_ci(name, "x-forwarded-") ||
      iequals(name, "x-real-ip") || iequals(name, "x-api-key") || starts_with_ci(name, "x-amz-") ||
      iequals(name, "x-goog-api-key"))
    return false;
  return starts_with_ci(name, "openai-") || starts_with_ci(name, "x-");
}

bool passback(std::string_view name) {
  // Not the organization or project the upstream billed: with the gateway's key they are the
  // gateway's account, and a client with its own key knows its own.
  if (iequals(name, "openai-organization") || iequals(name, "openai-project")) return false;
  return starts_with_ci(name, "x-ratelimit-") || starts_with_ci(name, "retry-after") ||
         starts_with_ci(name, "openai-");
}

std::string with_usage_requested(const std::string& body) {
  error_code ec;
  json::value v = json::parse(body, ec);
  if (ec || !v.is_object()) return {};
  auto& o = v.get_object();
  json::object so;
  if (auto* existing = o.if_contains("stream_options"); existing && existing->is_object()) so = existing->get_object();
  so["include_usage"] = true;
  o["stream_options"] = std::move(so);
  return json::serialize(v);
}

upstream_call make_upstream_call(http::request& client, std::string_view request_id, bool stream, bool pass_through,
                                 bool may_inject_usage) {
  upstream_call call;
  auto& up = call.req;
  up.method(client.method());
  up.version(11);
  for (const auto& f : client)
    if (forwardable(f.name_string())) up.set(f.name_string(), f.value());
  if (pass_through) {
    // No sluice client keys: the client's key is the upstream's. (With client keys, the client's
    // key is sluice's own: never sent on.) Its organization and project go with it, and only then.
    if (auto it = client.find(bhttp::field::authorization); it != client.end()) call.client_authorization = it->value();
    if (auto it = client.find("openai-organization"); it != client.end()) call.client_organization = it->value();
    if (auto it = client.find("openai-project"); it != client.end()) call.client_project = it->value();
  }
  up.set("x-request-id", request_id);
  if (client.method() == bhttp::verb::post) {
    up.set(bhttp::field::content_type, "application/json");
    up.body() = std::move(client.body());
  }
  up.set(bhttp::field::accept, stream ? "text/event-stream" : "application/json");
  call.may_inject_usage = may_inject_usage;
  return call;
}

void pass_content_headers(upstream::request& up, const http::request& client) {
  if (auto it = client.find(bhttp::field::content_type); it != client.end()) up.set(bhttp::field::content_type, it->value());
  else up.erase(bhttp::field::content_type);
  auto accept = client.find(bhttp::field::accept);
  if (accept != client.end()) up.set(bhttp::field::accept, accept->value());
  else up.set(bhttp::field::accept, "*/*");
}

std::optional<error> prepare_attempt(upstream_call& call, const routing::upstream_state& u, std::string_view path,
                                     std::string_view model, routing::usage_mode mode) {
  restore_chat_body(call);
  auto& req = call.req;
  auto target = upstream_target(u, path, model);
  if (!target) return std::move(target).err();
  req.target(*target);
  // Who is billed goes with whose key: the upstream's configured organization and project with
  // the gateway's key, the client's with the client's own key, none without a key.
  auto set_or_erase = [&req](std::string_view name, const std::string& value) {
    if (value.empty()) req.erase(name);
    else req.set(name, value);
  };
  if (!u.authorization.empty()) {
    req.set(bhttp::field::authorization, u.authorization);
    set_or_erase("openai-organization", u.spec.organization);
    set_or_erase("openai-project", u.spec.project);
  } else if (!call.client_authorization.empty()) {
    req.set(bhttp::field::authorization, call.client_authorization);
    set_or_erase("openai-organization", call.client_organization);
    set_or_erase("openai-project", call.client_project);
  } else {
    req.erase(bhttp::field::authorization);
    req.erase("openai-organization");
    req.erase("openai-project");
  }
  // An earlier attempt's upstream may have taken its key as api-key: never another's.
  req.erase("api-key");
  if (u.spec.key_style() == routing::key_header::api_key) bearer_to_api_key(req);
  if (call.may_inject_usage) inject_usage(call, u, mode);
  if (u.spec.dialect == routing::upstream_dialect::anthropic) return address_anthropic(call, u, path);
  return refuse_anthropic_only(u, path);
}

void inject_usage(upstream_call& call, const routing::upstream_state& u, routing::usage_mode mode) {
  // Ask for usage where a token budget is to be settled (the upstream's or the client key's); the
  // relay strips it again.
  const bool want = mode == routing::usage_mode::always || u.pace->has_token_budget() || call.key_counts_tokens;
  if (want == call.usage_injected) return;
  if (want && call.alternate_body.empty()) call.alternate_body = with_usage_requested(call.req.body());
  if (!call.alternate_body.empty()) {
    std::swap(call.req.body(), call.alternate_body);
    call.usage_injected = want;
  }
}

}  // namespace sluice::proxy
