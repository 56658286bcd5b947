// The Realtime API's WebSocket relay (issue 30): a client's `GET /v1/realtime` upgraded on its own
// connection and bridged to the upstream's WebSocket, frames passed through as they come, unparsed.
// Each direction holds one bounded piece (a frame's bytes are relayed in pieces, whatever the
// message's size) and reads its next piece only once the last was written: a slow reader slows its
// writer down. When either side leaves or closes, the other is closed with the same reason. The
// caller (pipeline::serve_realtime) has authenticated, limited and admitted the session and picked
// the upstream. One thread: the client connection's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <boost/asio/ssl/context.hpp>
#include <boost/beast/http/fields.hpp>

#include "config/url.hpp"
#include "core/error.hpp"
#include "http/types.hpp"
#include "runtime/asio.hpp"
#include "upstream/client.hpp"

namespace sluice::proxy {

namespace bhttp = boost::beast::http;

// Where and how the session is opened upstream.
struct realtime_target {
  const config::url* url = nullptr;  // the upstream's base URL (host, port, TLS)
  upstream::request head;            // the handshake's target and headers (prepare_attempt's)
};

struct realtime_limits {
  duration connect_timeout;   // DNS + TCP (+ TLS) + the upstream's handshake
  duration idle_timeout;      // no byte from a side this long (pings unanswered): the session ends
  std::uint64_t max_message;  // the largest message either side may send (close 1009 past it)
};

// How a session went: refused before the client's upgrade (an error to answer over HTTP), or relayed
// until one side ended it.
struct realtime_end {
  std::optional<error> refused;  // the upstream could not be reached or refused the handshake
  bool client_closed = false;    // the client closed (a close frame) or left
  bool upstream_failed = false;  // the upstream's connection broke (not a close frame)
  bool too_big = false;          // the client sent a message past realtime-max-message-bytes (1009)
  bool idle = false;             // a side stayed silent past realtime-idle-timeout, pings unanswered
  std::uint64_t bytes_to_client = 0, bytes_to_upstream = 0;
};

// Opens the upstream session, then accepts the client's upgrade (`req`) on `client` and relays
// both ways until either side ends. `extra` goes on the client's 101 (x-request-id and such).
task<realtime_end> relay_realtime(tcp::socket& client, const http::request& req, const realtime_target& t,
                                  const bhttp::fields& extra, boost::asio::ssl::context* tls, const realtime_limits& lim);

}  // namespace sluice::proxy
