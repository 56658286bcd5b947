// An Anthropic Messages API stream (message_start, content_block_start/delta/stop, message_delta,
// message_stop, ping, error) translated, event by event, into an OpenAI Responses API stream
// (`event: response.created` ... `event: response.completed`, each event's data carrying its
// `type` and a `sequence_number` counting from 0; no [DONE]) for a client of POST /v1/responses
// whose upstream speaks Messages (docs/dialects.md, "/v1/responses", has the mapping tables).
//
// Pure and incremental: one instance per stream, fed each upstream event as the relay's SSE parser
// dispatches it; the bytes to send the client are appended to `out`. Unlike the chat translation
// it must keep what it has sent: the Responses API's `.done` events repeat an item's whole text or
// arguments, and response.completed repeats every item. What it keeps is bounded by
// max_output_bytes (the text, thinking and arguments of one response, the JSON around them aside)
// and max_blocks; past either the stream ends with an error event. Not thread-safe, no I/O.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "dialects/anthropic_upstream_common.hpp"
#include "dialects/anthropic_upstream_responses_object.hpp"

namespace sluice::dialects {

class messages_to_responses_stream {
 public:
  // Content blocks one message may open (each may become an output item).
  static constexpr std::size_t max_blocks = 1024;
  // The text, thinking and tool arguments one response may carry by default: all of it is kept for
  // the `.done` events and response.completed, which is about this large (more where JSON escapes
  // characters). The gateway passes its stream-buffer bound instead (the largest event its relay
  // takes, as for any Responses upstream: proxy/adapters/anthropic_upstream.cpp).
  static constexpr std::size_t max_output_bytes = 1024 * 1024;

  explicit messages_to_responses_stream(response_start_info info, std::size_t max_output = max_output_bytes)
      : info_(std::move(info)), max_output_(max_output) {}

  // One upstream event: its SSE `event:` field (may be empty; the data's own "type" decides when
  // it names one) and its data. Appends the client's events. False when the stream ended with an
  // error (an `error` event, data that is not JSON, an event out of order, a bound passed); once
  // finished, further events add nothing (and return whether it finished cleanly).
  bool on_event(std::string_view type, std::string_view data, std::string& out);

  // The upstream body ended. After message_stop: nothing (response.completed or
  // response.incomplete was the last event); before it: the error event. Idempotent.
  void on_end(std::string& out);

  // Ends the stream now with the error event (type upstream_error, code upstream_protocol_error):
  // an oversized event, a framing error the caller found. Nothing once finished.
  void fail(std::string_view message, std::string& out);

  bool finished() const noexcept { return done_; }
  // The sequence_number the next event would get (the gateway's own in-band error continues it).
  std::int64_t next_sequence_number() const noexcept { return sequence_; }
  std::uint64_t prompt_tokens() const noexcept { return usage_.prompt_tokens(); }
  std::uint64_t completion_tokens() const noexcept { return usage_.completion_tokens(); }

 private:
  enum class item_kind { message, reasoning, function_call, ignored };
  // The one content block open (the Messages API streams blocks one after another).
  struct open_item {
    std::uint64_t index = 0;  // the upstream's block index
    item_kind kind = item_kind::ignored;
    std::size_t output_index = 0;
    std::string id;
    std::string call_id;  // function_call: the tool_use id
    std::string name;     // function_call: the tool's name
    std::string text;     // the text, thinking or arguments so far
    std::string delta_prefix;  // each delta event's fields before "delta"
  };
  bool dispatch(std::string_view type, const boost::json::object& event, std::string& out);
  bool on_message_start(const boost::json::object& event, std::string& out);
  bool on_block_start(const boost::json::object& event, std::string& out);
  void open_item_events(const boost::json::object& block, std::string& out);
  bool on_block_delta(const boost::json::object& event, std::string& out);
  bool add_delta(std::string_view delta, std::string& out);
  bool on_block_stop(const boost::json::object& event, std::string& out);
  bool close_item(std::string& out);
  bool on_message_delta(const boost::json::object& event, std::string& out);
  bool on_message_stop(const boost::json::object& event, std::string& out);
  bool failed(std::string_view message, std::string& out) {
    fail(message, out);
    return false;
  }
  void upstream_error(const boost::json::object& event, std::string& out);
  void error_event(std::string_view message, openai_error_kind kind, std::string& out);
  boost::json::object item_of(const open_item& item, std::string_view status) const;
  // One event: `event: <type>`, data {"type","sequence_number", then `fields` (a JSON object's
  // members, without its braces)}.
  void emit(std::string_view type, std::string_view fields, std::string& out);
  void emit(std::string_view type, const boost::json::object& fields, std::string& out);

  response_start_info info_;
  std::string model_;  // message_start's model, else info_.model
  std::optional<open_item> open_;
  boost::json::array items_;  // the output items done so far, as response.completed carries them
  std::size_t max_output_;
  std::size_t kept_bytes_ = 0;  // text, thinking and arguments kept (≤ max_output_)
  std::size_t blocks_opened_ = 0;
  std::string stop_reason_;
  messages_usage usage_;
  std::int64_t sequence_ = 0;
  bool started_ = false;
  bool done_ = false;
  bool clean_ = false;  // finished at message_stop, not by an error
};

}  // namespace sluice::dialects
