// The route table (the paths the gateway serves, each with its API and method) and what
// pipeline::parse finds beside it (ADR 0021, 0027, 0028): a stored response named by id (the
// gateway's own, or the upstream's), a model named by id, a streamed route, and the Realtime
// session's model; and the stored-object routes' tenant rule. Which module then serves a request
// is the dispatcher's (dispatcher.hpp). Pure functions over the request and its context;
// thread-safe.
#pragma once

#include <optional>
#include <string_view>

#include "core/error.hpp"
#include "http/types.hpp"
#include "proxy/request_context.hpp"
#include "routing/router.hpp"

namespace sluice::proxy {

struct route_entry {
  std::string_view path;
  obs::route route;
  api which;
  boost::beast::http::verb method;
};
// The table's row for `path` (no query); null: none (parse_beside_table may still route it).
const route_entry* find_route(std::string_view path) noexcept;
// The request's path without its query.
std::string_view path_without_query(const http::request& req) noexcept;

struct beside_table {
  bool routed = false;       // the path is one of these routes: `bad` is parse's answer
  std::optional<error> bad;  // the 400/404/405 to answer, or nothing
};

// A path that is no row of the JSON table, or (`on_table`) a row's path with another method.
beside_table parse_beside_table(request_context& ctx, const http::request& req, std::string_view target, bool on_table);

// GET /v1/realtime?model=M: the model routed like a body's, the query sent on.
std::optional<error> adopt_realtime(request_context& ctx, const http::request& req);

// A stored-object route's upstream (ADR 0027, docs/security.md): the first that gets the client's
// own key, kept in ctx; the refusal when there is none (client keys configured: the gateway's
// credential would go instead, and clients would share one account). Nothing for other routes.
std::optional<error> claim_objects_upstream(request_context& ctx, const routing::router& rt, bool client_keys);

}  // namespace sluice::proxy
