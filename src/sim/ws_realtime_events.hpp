// The OpenAI Realtime API's events as the simulator answers them (GET /v1/realtime, sim/ws_realtime.hpp):
// one client event's text in, the server events to send back out, as pure functions of one session's
// state. No I/O and no clock: every id and word comes from the session's key and its counters, so a
// session replays byte for byte. One state per session, touched by its coroutine only.
#pragma once

#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::sim {

// A session.update may not grow the session object past this many fields.
inline constexpr std::size_t realtime_max_session_fields = 256;

struct realtime_config {
  std::string model;        // session.model until a session.update changes it
  std::uint64_t tokens = 16;  // words a response carries (max_output_tokens may cut it)
  std::uint64_t key = 0;    // the session's identity: seeds its ids and words (realtime_key)
};

// The key of a worker's `number`-th Realtime session (1-based) under the sim's seed.
std::uint64_t realtime_key(std::uint64_t seed, std::size_t worker, std::uint64_t number) noexcept;

// The response a response.create started, streamed one event at a time after its response.created.
struct realtime_response {
  std::string id, item_id;          // resp_..., item_...
  std::uint64_t seed_of_words = 0;  // picks its words
  std::uint64_t words = 0;          // output tokens: one word each
  std::uint64_t sent = 0;           // word deltas produced so far
  std::uint64_t input_tokens = 0;
  bool cut = false;                 // max_output_tokens cut it: status "incomplete"
  bool text_done = false;           // response.output_text.done produced; response.done is next
};

struct realtime_state {
  explicit realtime_state(realtime_config c);

  realtime_config config;
  boost::json::object session;      // session.created's "session", merged by every session.update
  std::uint64_t ids = 0;            // ids handed out: the counter each id hashes
  std::string last_item_id;         // the conversation's last item (previous_item_id); empty = none
  std::uint64_t audio_buffered = 0;   // input audio bytes appended since the last commit or clear
  std::uint64_t audio_committed = 0;  // committed input audio bytes (input tokens)
  std::uint64_t audio_bytes = 0;      // every decoded input audio byte of the session
  std::uint64_t item_bytes = 0;       // the created items' JSON bytes (input tokens)
  std::optional<realtime_response> response;  // being streamed
};

// {"type":"session.created","event_id":"event_...","session":{...}}: the first event of a session.
std::string realtime_session_created(realtime_state& s);

// The server events that answer one client text message, in order (none for input_audio_buffer.append).
// A text that is not a JSON object with a string "type" is an error event with code "invalid_json",
// an unknown type one with "unknown_event", a known type with a bad field one naming it in "param";
// sim.echo is answered with the text itself, unchanged. response.create answers response.created and
// leaves the response in s.response for realtime_next_response_event.
std::vector<std::string> realtime_replies(std::string_view text, realtime_state& s);

// The next event of s.response: one response.output_text.delta per word (`word` set: it is paced),
// then response.output_text.done, then response.done, which clears s.response. Nothing without one.
struct realtime_event {
  std::string text;
  bool word = false;
};
std::optional<realtime_event> realtime_next_response_event(realtime_state& s);

// The size of standard base64 (padding optional; no whitespace) once decoded, or nothing when `text`
// is not base64.
std::optional<std::uint64_t> base64_decoded_size(std::string_view text) noexcept;

}  // namespace sluice::sim
