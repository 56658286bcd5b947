// The in-band end of a stream the gateway must break once its head is out (a relay's failure, a
// follower's lost store, a foreground job's failure, the drain's cut): one error event in the
// stream's API shape and the body's clean end, never `[DONE]`, never a silent end. The one place
// that event is made. Pure, but for the one write; call on the downstream's thread.
#pragma once

#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "http/downstream.hpp"
#include "http/error_response.hpp"
#include "sse/parser.hpp"

namespace sluice::proxy {

// The event that ends a broken stream: on the Responses API (`responses`) its `error` event, whose
// `sequence_number` continues the stream's (one past the last event's); otherwise the chat-style
// `data: {"error":...}`.
inline std::string in_band_error(const error& e, bool responses, std::int64_t sequence_number) {
  return responses ? sse::format_event(http::responses_error_event(e, sequence_number), "error")
                   : sse::format_event(http::error_body(e));
}

// Writes in_band_error() as the last chunk of `d`'s streamed body. What the write answers is not
// needed: the stream ends either way (a client that left hears nothing more).
inline task<void> end_in_band(http::downstream& d, const error& e, bool responses, std::int64_t sequence_number) {
  (void)co_await d.write_last_chunk(in_band_error(e, responses, sequence_number));
}

}  // namespace sluice::proxy
