// Deterministic OpenAI wire content: stream chunks, non-stream bodies, error bodies and rate-limit
// header values. Everything is a pure function of the parsed request and its settings (no clock, no
// counters), so identical requests give byte-identical responses. One generator per response, not
// thread-safe; it holds a ~200-byte prefix and appends into a caller-owned, reused string.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/units.hpp"
#include "sim/request.hpp"

namespace sluice::sim {

class generator {
 public:
  generator(const completion_request& req, std::uint64_t tokens, std::uint64_t token_size);

  // Tokens this response carries: the configured count, capped by max_tokens.
  std::uint64_t completion_tokens() const noexcept { return count_; }
  // "length" when max_tokens cut the response, else "stop".
  std::string_view finish_reason() const noexcept { return cut_ ? "length" : "stop"; }
  const std::string& id() const noexcept { return id_; }
  std::uint64_t created() const noexcept { return created_; }

  // Stream events, each appended to `out` as one complete SSE event ("data: ...\n\n").
  // Chat streams open with a role chunk; legacy completions have none.
  bool has_role_chunk() const noexcept { return kind_ == api::chat; }
  void append_role_chunk(std::string& out);
  void append_token_chunk(std::string& out);  // the next token
  void append_finish_chunk(std::string& out);
  void append_usage_chunk(std::string& out);  // only sent when stream_options.include_usage
  void append_malformed_event(std::string& out);
  static void append_done(std::string& out);

  // The whole non-stream body (chat.completion or text_completion, with usage).
  std::string body();

  // Appends the next token's text (exactly token_size bytes, JSON-safe ASCII).
  void append_token_text(std::string& out);

 private:
  void append_chunk_open(std::string& json) const;
  void append_chunk_close(std::string& json, std::string_view finish) const;
  void append_usage_object(std::string& json) const;
  std::uint64_t next() noexcept;

  api kind_;
  bool include_usage_;
  bool cut_;
  std::uint64_t count_, token_size_, prompt_tokens_, created_, state_;
  std::string id_;
  std::string head_;   // `{"id":...,"model":...,` shared by every chunk of this response
  std::string json_;   // scratch for one event's JSON, reused
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

// OpenAI's x-ratelimit-reset-* format (Go durations): "20ms", "1s", "1.5s", "6m0s", "1h0m0s".
std::string openai_reset_format(duration d);

}  // namespace sluice::sim
