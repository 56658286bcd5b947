// Deterministic OpenAI wire content: stream chunks, non-stream bodies, error bodies and rate-limit
// header values. Everything is a pure function of the parsed request and its settings (no clock, no
// counters), so identical requests give byte-identical responses. One generator per response, not
// thread-safe; it holds a ~200-byte prefix and appends into a caller-owned, reused string.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/units.hpp"
#include "sim/request.hpp"

namespace sluice::sim {

// Appends v in decimal (the generators write their JSON by hand).
void append_uint(std::string& out, std::uint64_t v);

class generator {
 public:
  // `choice`: this generator's choice index (n > 1); choice 0 is exactly the single-choice answer,
  // the others draw their words from the same hash mixed with their index.
  generator(const completion_request& req, std::uint64_t tokens, std::uint64_t token_size, std::uint32_t choice = 0);

  // Tokens this response carries: the configured count, capped by max_tokens.
  std::uint64_t completion_tokens() const noexcept { return count_; }
  // "length" when max_tokens cut the response, else "tool_calls" for a tool call, else "stop".
  std::string_view finish_reason() const noexcept { return cut_ ? "length" : calls_tool() ? "tool_calls" : "stop"; }
  // The answer calls req.tool_call (chat, responses): the token text is the call's arguments.
  bool calls_tool() const noexcept { return !tool_name_.empty(); }
  const std::string& call_id() const noexcept { return call_id_; }
  const std::string& id() const noexcept { return id_; }
  std::uint64_t created() const noexcept { return created_; }

  // Output exactly `text` (x-sim-content) instead of generated words: token i is the i-th slice of
  // token_size bytes (never cut inside a UTF-8 sequence), JSON-escaped. `text` must outlive this.
  void use_content(const std::string& text) noexcept { content_ = &text; }

  // Stream events, each appended to `out` as one complete SSE event ("data: ...\n\n").
  // Chat streams open with a role chunk; legacy completions have none. For the Responses API the
  // same calls produce its typed events (responses_content.cpp): the "role chunk" is
  // response.created .. response.content_part.added, a token chunk is response.output_text.delta,
  // the finish chunk is response.output_text.done .. response.completed; it has no [DONE]. The
  // Messages API's (messages.cpp) likewise: message_start, content_block_start and ping; one
  // content_block_delta per token; content_block_stop, message_delta and message_stop.
  bool has_role_chunk() const noexcept { return kind_ != api::completion; }
  bool has_done_marker() const noexcept { return kind_ != api::responses && kind_ != api::messages; }
  void append_role_chunk(std::string& out);
  void append_token_chunk(std::string& out);  // the next token
  void append_finish_chunk(std::string& out);
  void append_usage_chunk(std::string& out);  // only sent when stream_options.include_usage
  // A non-JSON event; the Messages API's is instead Anthropic's in-band error event
  // (`event: error`, an overloaded_error), after which its stream ends.
  void append_malformed_event(std::string& out);
  static void append_done(std::string& out);

  // The whole non-stream body (chat.completion or text_completion, with usage).
  std::string body();
  // The same with every generator's choice in `choices` (chat, completions); usage counts them all.
  static std::string whole_body(std::span<generator> choices);
  // usage.completion_tokens when this generator's usage chunk stands for several choices.
  void set_usage_tokens(std::uint64_t n) noexcept { usage_tokens_ = n; }

  // Appends the next token's text (exactly token_size bytes, JSON-safe ASCII; with use_content, the
  // next slice of that text, JSON-escaped).
  void append_token_text(std::string& out);

 private:
  // Responses API (responses_content.cpp).
  void append_response_open(std::string& out);
  void append_response_delta(std::string& out);
  void append_response_close(std::string& out);
  std::string response_body();
  // {"id":..,"object":"response",..} with this status, output array and usage (JSON snippets).
  std::string response_object(std::string_view status, std::string_view output, bool with_usage) const;
  std::string message_item(std::string_view status, std::string_view text_json) const;
  std::string function_call_item(std::string_view status, std::string_view arguments_json) const;
  void append_typed_event(std::string& out, std::string_view type, std::string_view fields);
  // Messages API (messages.cpp).
  void append_message_open(std::string& out);
  void append_message_delta(std::string& out);
  void append_message_close(std::string& out);
  void append_message_error(std::string& out);
  std::string message_body() const;
  std::string_view stop_reason() const noexcept;  // end_turn, max_tokens or tool_use
  std::string_view model_json() const;            // the model as a JSON string, from head_
  // The tool call's arguments as the whole answer's `input`: the raw text the tokens carry when it
  // is JSON, else that text as a JSON string.
  std::string tool_input_json() const;
  // Every token's text from the start (a replay of the same deterministic sequence), JSON-escaped.
  std::string full_text() const;

  void append_chunk_open(std::string& json) const;
  void append_chunk_close(std::string& json, std::string_view finish) const;
  void append_usage_object(std::string& json) const;
  std::uint64_t next() noexcept;

  api kind_;
  bool include_usage_;
  bool cut_;
  std::uint32_t choice_;
  std::uint64_t count_, token_size_, prompt_tokens_, created_, state_;
  std::uint64_t usage_tokens_;
  std::uint64_t start_state_;
  const std::string* content_ = nullptr;  // x-sim-content text, or null for generated words
  std::size_t content_pos_ = 0;
  std::uint64_t sequence_ = 0;            // Responses API sequence_number
  std::string id_;
  std::string tool_name_, call_id_;  // a tool call: the function's name (JSON-safe) and "call_..."
  std::string head_;   // `{"id":...,"model":...,` shared by every chunk of this response
  std::string json_;   // scratch for one event's JSON, reused
};

// The choices of one response: one generator per index 0..n-1 (the Responses and Messages APIs
// have one). Each outputs `content` when given (a tool call's arguments when the request calls a
// tool; "{}" when no content is given), or with `per_choice` non-empty its element i (the last one
// past its end); the texts must outlive this. Token counts (and so finish reasons) are per choice.
class choice_set {
 public:
  choice_set(const completion_request& req, std::uint64_t tokens, std::uint64_t token_size,
             const std::optional<std::string>& content = std::nullopt,
             const std::vector<std::string>& per_choice = {});

  std::size_t size() const noexcept { return gens_.size(); }
  generator& front() noexcept { return gens_.front(); }
  std::uint64_t steps() const noexcept { return steps_; }  // the longest choice's token count
  bool has_role_chunk() const noexcept { return gens_.front().has_role_chunk(); }
  bool has_done_marker() const noexcept { return gens_.front().has_done_marker(); }

  // The stream, as OpenAI interleaves it: a role chunk per choice, then for step i in 0..steps()
  // each choice's token i (a chunk carrying its `index`), or its finish chunk at the step its tokens
  // ran out; then the usage chunk (all choices' tokens) and [DONE].
  void append_role_chunks(std::string& out);
  void append_step(std::string& out, std::uint64_t i);
  void append_usage_chunk(std::string& out);
  std::string body();  // the whole answer with every choice

 private:
  std::vector<generator> gens_;
  std::uint64_t steps_ = 0;
};

// Every event of a stream concatenated, as the simulator would send it without faults.
std::string render_stream(const completion_request& req, std::uint64_t tokens, std::uint64_t token_size);

// {"error":{"message","type","param","code"}}; empty param/code become null.
std::string error_body(std::string_view message, std::string_view type, std::string_view param = {},
                       std::string_view code = {});
// The OpenAI error `type` usually paired with an HTTP status.
std::string_view error_type_for_status(int status);

// GET /v1/models
std::string models_body(const std::vector<std::string>& models);
// GET /v1/models/{id}: one model's object.
std::string model_body(std::string_view id);

// --spaced-json: the same JSON written the way Python's json.dumps writes it, a space after every
// ':' and ',' outside strings, so that the gateway is tested against both forms. `sse`: the text is
// SSE events, and only their `data: ` payloads are respaced.
std::string spaced_json(std::string_view text, bool sse);

}  // namespace sluice::sim
