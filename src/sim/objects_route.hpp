// The stored-object routes (sim/objects_api.hpp) as the session serves them: the body read whole
// under max-body like any JSON route, the answer written whole. On the connection's worker thread.
#pragma once

#include <string_view>

#include "sim/worker.hpp"

namespace sluice::sim {

// Serves a request whose path (no query) is_objects_path, the key already checked.
task<response_end> route_objects(connection& c, const http::request<http::string_body>& req);

}  // namespace sluice::sim
