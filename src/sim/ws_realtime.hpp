// GET /v1/realtime: the OpenAI Realtime API as the simulator serves it, a WebSocket on the session's
// own socket. One coroutine per session reads a client event, then writes every reply to it (a
// response.create's paced stream included) before it reads the next, so a session never has two
// writes in flight and holds one message at a time. On the connection's worker thread only.
#pragma once

#include <string_view>

#include "sim/worker.hpp"

namespace sluice::sim {

// The Realtime route's path (no query).
bool is_realtime_path(std::string_view path) noexcept;

// Serves GET /v1/realtime?model=M whose head and (empty) body were read: without a WebSocket
// upgrade a 400; else the upgrade, session.created, and the events (sim/ws_realtime_events.hpp)
// until the client closes or leaves, or the server stops. The connection ends with the session.
task<response_end> serve_realtime(connection& c, const http::request<http::string_body>& req);

}  // namespace sluice::sim
