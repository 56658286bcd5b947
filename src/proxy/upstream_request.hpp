// The upstream request a client's request becomes: which client headers go on (an allow-list),
// the body, and what changes per attempt (the target path under the upstream's base, the
// Authorization sluice or the client supplies, the body variant that asks for usage). Pure
// functions over Beast messages; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "http/types.hpp"
#include "proxy/attempts.hpp"
#include "routing/options.hpp"
#include "routing/router.hpp"

namespace sluice::proxy {

// Client headers passed on as they are (the allow-list of docs/routing.md): OpenAI's own and custom
// x- headers; never hop-by-hop ones, credentials (Authorization is set per attempt; x-api-key and
// other providers' key headers never), identity sluice sets (x-request-id, x-forwarded-*),
// sluice's own controls (x-sluice-*), nor OpenAI-Organization / OpenAI-Project (per attempt).
bool forwardable(std::string_view name);
// Upstream response headers passed back: rate limits, retry-after, OpenAI's own (less the
// organization and project that were billed).
bool passback(std::string_view name);

// The call for `client` (its body is moved out). `pass_through`: no client keys are configured,
// so the client's own Authorization is the upstream's key (kept for upstreams without a key).
upstream_call make_upstream_call(http::request& client, std::string_view request_id, bool stream, bool pass_through,
                                 bool may_inject_usage);

// A streamed route's request (streamed_routes.hpp): the client's Content-Type (a multipart body's
// boundary with it) and Accept go on as they are.
void pass_content_headers(upstream::request& up, const http::request& client);

// What one attempt on `u` sends: the path under u's base, u's key (or the client's, or none), and
// under usage injection the body variant that asks for usage when u has a token budget to settle;
// for an Anthropic upstream, all of it in its dialect (anthropic_upstream.hpp). An error: the
// request cannot be sent to u.
std::optional<error> prepare_attempt(upstream_call& call, const routing::upstream_state& u, std::string_view path,
                                     std::string_view model, routing::usage_mode mode);
// The usage-injection part of prepare_attempt.
void inject_usage(upstream_call& call, const routing::upstream_state& u, routing::usage_mode mode);

// The body with stream_options.include_usage set; empty when it cannot be rewritten.
std::string with_usage_requested(const std::string& body);

}  // namespace sluice::proxy
