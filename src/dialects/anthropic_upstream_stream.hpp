// An Anthropic Messages API stream (message_start, content_block_start/delta/stop, message_delta,
// message_stop, ping, error) translated, event by event, into a chat-completions stream
// (`chat.completion.chunk` events, the usage chunk, `data: [DONE]`) for a client of
// /v1/chat/completions whose upstream speaks Messages (docs/dialects.md has the mapping tables).
//
// Pure and incremental: one instance per stream, fed each upstream event as the relay's SSE parser
// dispatches it; the bytes to send the client are appended to `out`. It holds no event, only the
// stream's state (the open blocks' kinds, bounded by max_blocks; the stop reason; the usage), so
// its memory does not grow with the stream. Not thread-safe, no I/O.
#pragma once

#include <boost/json/object.hpp>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "dialects/anthropic_upstream_common.hpp"

namespace sluice::dialects {

// What the gateway knows of the answer before the upstream's first event.
struct chunk_start_info {
  std::string id;              // the chunk id the client sees (the gateway makes it: "chatcmpl-" + random)
  std::string model;           // the model the client asked for, used when the upstream names none
  std::int64_t created = 0;    // unix seconds, the same in every chunk
  bool include_usage = false;  // the chat request asked for stream_options.include_usage
};

class messages_to_chat_stream {
 public:
  // Content blocks one message may open: the translator remembers each open block's kind (and a
  // tool_use block's tool-call index); past the cap the stream ends with an error event.
  static constexpr std::size_t max_blocks = 1024;

  explicit messages_to_chat_stream(chunk_start_info info) : info_(std::move(info)) {}

  // One upstream event: its SSE `event:` field (may be empty; the data's own "type" decides when it
  // names one) and its data. Appends what the client gets ("data: {...}\n\n" chunks; at
  // message_stop the finish chunk, the usage chunk when asked for, and "data: [DONE]\n\n").
  // False when the stream ended with an error (an `error` event, data that is not JSON, an event
  // out of order); once finished, further events add nothing.
  bool on_event(std::string_view type, std::string_view data, std::string& out);

  // The upstream body ended. After message_stop: nothing (all was sent then); before it: an in-band
  // error event. Idempotent.
  void on_end(std::string& out);

  // Ends the stream now with an in-band error event (type upstream_error, code
  // upstream_protocol_error): an oversized event, a framing error the caller found.
  void fail(std::string_view message, std::string& out);

  bool finished() const noexcept { return done_; }
  std::uint64_t prompt_tokens() const noexcept { return usage_.prompt_tokens(); }
  std::uint64_t completion_tokens() const noexcept { return usage_.completion_tokens(); }

 private:
  enum class block_kind { text, thinking, tool_use, ignored };
  struct open_block {
    block_kind kind = block_kind::ignored;
    std::size_t tool_index = 0;  // for tool_use: the chat tool call's index (0, 1, 2... in order)
  };
  bool dispatch(std::string_view type, const boost::json::object& event, std::string& out);
  bool on_message_start(const boost::json::object& event, std::string& out);
  bool on_block_start(const boost::json::object& event, std::string& out);
  bool on_block_delta(const boost::json::object& event, std::string& out);
  bool on_block_stop(const boost::json::object& event, std::string& out);
  void on_tool_start(const boost::json::object& block, std::size_t tool_index, std::string& out);
  void finish(std::string& out);
  void upstream_error(const boost::json::object& event, std::string& out);
  void error_event(std::string_view message, openai_error_kind kind, std::string& out);
  // One chunk: the fixed prefix, `delta` (a JSON object's bytes), the finish_reason (null if empty).
  void emit_chunk(std::string_view delta, std::string_view finish_reason, std::string& out) const;
  void emit_text(std::string_view field, std::string_view text, std::string& out) const;

  chunk_start_info info_;
  std::string model_;   // message_start's model, else info_.model
  std::string prefix_;  // every chunk's bytes up to its delta, fixed at message_start
  std::map<std::uint64_t, open_block> open_;  // open blocks by the upstream's index (≤ max_blocks)
  std::size_t blocks_opened_ = 0;
  std::size_t tool_calls_ = 0;
  std::string stop_reason_;
  messages_usage usage_;
  bool started_ = false;
  bool done_ = false;
  bool clean_ = false;  // finished at message_stop, not by an error
};

}  // namespace sluice::dialects
