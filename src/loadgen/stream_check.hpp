// Verifies one response body as it arrives, without keeping it: SSE framing, JSON of every data
// payload, in-band error events and the closing [DONE] (or, for non-stream requests, a JSON body
// with choices). Responses API answers (wire::responses) instead: typed events numbered from 0 by
// sequence_number, response.created first, response.completed (with usage) last; a whole answer
// with status "completed" and an output array. One instance per request, used on one thread;
// json_scratch is per thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parser.hpp>
#include <boost/json/stream_parser.hpp>

#include "loadgen/histogram.hpp"
#include "sse/parser.hpp"

namespace sluice::loadgen {

using clock = std::chrono::steady_clock;

// A reusable JSON parser over a fixed scratch buffer, so checking a chunk allocates nothing in
// the common case. Shared by every stream of one worker thread (they never parse at once).
struct json_scratch {
  json_scratch() : resource(buffer, sizeof buffer) {}
  json_scratch(const json_scratch&) = delete;
  json_scratch& operator=(const json_scratch&) = delete;

  alignas(16) unsigned char buffer[16 * 1024];
  boost::json::monotonic_resource resource;
  boost::json::parser parser;
};

enum class verdict { pending, ok, truncated, malformed, error_event };

// Which wire format the answer has: chat and legacy completions (`choices`, [DONE]), the
// Responses API, or Anthropic's Messages API (message_start first, message_stop last; a whole
// answer of type "message").
enum class wire { choices, responses, messages };

// The wire format of the answers to requests on `path`.
wire wire_of_path(std::string_view path) noexcept;

class stream_check {
 public:
  // streaming: an SSE body is expected; otherwise one JSON document with "choices".
  // gaps (optional) receives the time between consecutive chunks, in nanoseconds.
  stream_check(bool streaming, json_scratch& scratch, histogram* gaps = nullptr, wire format = wire::choices);

  // Body bytes that arrived at `now`. Returns false once the verdict is final and reading can stop.
  bool feed(std::string_view bytes, clock::time_point now);
  // The body ended: `clean` when the HTTP message completed (final chunk or full Content-Length).
  verdict finish(bool clean);

  verdict state() const noexcept { return verdict_; }
  const std::string& reason() const noexcept { return reason_; }  // why it failed, for diagnostics
  std::uint64_t chunks() const noexcept { return chunks_; }
  // [DONE] (chat), response.completed (Responses API), message_stop (Messages API).
  bool saw_done() const noexcept { return saw_done_; }
  // When the first token arrived: the first chunk carrying content (or, if none did, the first
  // chunk at all); for non-stream bodies, the first body byte.
  std::optional<clock::time_point> first_token() const noexcept {
    return first_content_ ? first_content_ : first_chunk_;
  }

  // Largest SSE event accepted; larger is malformed (bounds the parser's memory per stream).
  static constexpr std::size_t max_event_bytes = 256 * 1024;

 private:
  bool on_event(const sse::event_view& ev, clock::time_point now);
  // [DONE], and what may follow the end, as the wire format has it: the event's answer (false:
  // it failed), or nullopt when the event is to be parsed.
  std::optional<bool> on_done_marker(std::string_view data);
  // A Responses API event (parsed): order, sequence numbers, the terminal event. False: it failed.
  bool on_response_event(const boost::json::object& event, std::string_view data, bool& content);
  // A Messages API event (parsed): its type names the event, message_start first, nothing after
  // message_stop. False: it failed.
  bool on_message_event(const boost::json::object& event, std::string_view event_type, std::string_view data,
                        bool& content);
  // Its sequence_number is the next one, and response.created comes first and only once.
  bool check_sequence(const boost::json::object& event, std::string_view type);
  // response.completed carries status "completed" and usage; nothing may follow it.
  bool check_completed(const boost::json::object& event);
  void finish_whole(const boost::json::value& v);
  void finish_whole_message(const boost::json::value& v);
  void fail(verdict v, std::string why);

  sse::parser sse_;
  json_scratch* scratch_;
  histogram* gaps_;
  std::unique_ptr<boost::json::stream_parser> body_;  // non-stream only
  verdict verdict_ = verdict::pending;
  std::string reason_;
  std::uint64_t chunks_ = 0;
  bool streaming_;
  wire format_;
  bool saw_done_ = false;
  std::uint64_t next_sequence_ = 0;  // responses: the sequence_number the next event must carry
  bool started_ = false;             // messages: message_start came
  std::optional<clock::time_point> first_chunk_, first_content_, last_chunk_;
};

std::string_view to_string(verdict v) noexcept;

}  // namespace sluice::loadgen
