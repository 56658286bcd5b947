// A chat-completions stream (OpenAI's `chat.completion.chunk` events) translated, event by event,
// into the Anthropic Messages API's stream: message_start, content_block_start/delta/stop for text,
// thinking and tool_use blocks, message_delta with the stop reason and usage, message_stop, and an
// `error` event when the upstream breaks (docs/dialects.md has the mapping tables).
//
// Pure and incremental: one instance per stream, fed each upstream event's data as the relay's SSE
// parser dispatches it; the bytes to send the client are appended to `out`. It holds no event, only
// the stream's state (the open block, the stop reason, the usage), so its memory does not grow with
// the stream. Not thread-safe, no I/O.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::dialects {

enum class block_kind { none, text, thinking, tool_use };

// What the gateway knows of a message before the upstream's first chunk.
struct message_start_info {
  std::string id;     // the gateway's own message id (msg_ and 128 random bits), never the upstream's
  std::string model;  // the model the client asked for, where the upstream's chunk names none
  // The gateway's estimate of the prompt's tokens (its pacing estimate): message_start carries it,
  // since a chat stream reports usage only after its last choice; message_delta then carries the
  // upstream's own count.
  std::uint64_t input_tokens_estimate = 0;
};

class chat_to_messages_stream {
 public:
  // The tool calls one message may carry: past it the stream ends with an `error` event (the
  // translator remembers each call's index to refuse a reopened one; this bounds that memory).
  static constexpr std::size_t max_tool_calls = 1024;

  explicit chat_to_messages_stream(message_start_info info = {}) : info_(std::move(info)) {}

  // One upstream event's data: a chunk's JSON, an error object, or "[DONE]". A chunk that is not
  // JSON, or not a chunk, ends the stream with an `error` event (and false).
  bool on_event(std::string_view data, std::string& out);

  // The upstream stream ended (its body closed). Emits the terminal events a finished stream still
  // owes (message_delta and message_stop), or an `error` event where the upstream stopped before it
  // said why (no finish_reason). Idempotent.
  void on_end(std::string& out);

  // The stream ends now with an `error` event of Anthropic's shape (an upstream reset, a timeout).
  void fail(std::string_view type, std::string_view message, std::string& out);

  bool finished() const noexcept { return done_; }
  std::uint64_t input_tokens() const noexcept { return input_tokens_; }
  std::uint64_t output_tokens() const noexcept { return output_tokens_; }

  // The Messages API's stop_reason for a chat completion's finish_reason (docs/dialects.md).
  static std::string_view stop_reason_of(std::string_view finish_reason) noexcept;

 private:
  struct tool_block {
    std::int64_t openai_index = 0;
    bool closed = false;
  };
  void start(std::string_view model, std::string& out);
  void open_block(block_kind kind, std::string_view start_json, std::string& out);
  void close_block(std::string& out);
  bool on_text(std::string_view text, block_kind kind, std::string& out);
  bool on_tool_delta(const void* tool_call, std::string& out);
  // One parsed chunk (a JSON object); false: the stream ended with an error.
  bool on_chunk(const boost::json::object& chunk, std::string& out);
  void finish(std::string& out);

  message_start_info info_;
  std::string stop_reason_;      // set by the chunk that carries finish_reason
  std::string stop_sequence_;    // the matched stop string, where the upstream names it (vLLM)
  std::vector<tool_block> tools_;
  std::uint64_t input_tokens_ = 0;
  std::uint64_t output_tokens_ = 0;
  std::uint64_t cache_read_tokens_ = 0;
  int next_block_ = 0;           // the index the next content block gets
  block_kind open_ = block_kind::none;
  bool started_ = false;
  bool done_ = false;
};

}  // namespace sluice::dialects
