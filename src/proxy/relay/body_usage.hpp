// The token usage an upstream reports in an answer the gateway does not otherwise parse: a whole
// JSON body (chat, completions, responses, embeddings, a transcription), or the events of an SSE
// answer a streamed route relays as bytes (a streamed transcription's transcript.text.done). Read by
// the relay's own scanner (event_scan.hpp); pure, one thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "sse/parser.hpp"

namespace sluice::proxy {

struct reported_usage {
  std::uint64_t in = 0, out = 0;
};

// The usage of one JSON document (prompt_/completion_tokens, or input_/output_tokens); nothing when
// it reports none.
std::optional<reported_usage> usage_of(std::string_view json) noexcept;

// Watches an SSE answer's bytes as they pass (never changes them) for the last event that reports
// usage. Its memory is the parser's pending event, at most `max_event_bytes`; an event past that
// ends the watch (the answer still passes through).
class sse_usage_watch {
 public:
  explicit sse_usage_watch(std::size_t max_event_bytes) : parser_(max_event_bytes) {}
  void feed(std::string_view bytes);
  const std::optional<reported_usage>& usage() const noexcept { return usage_; }

 private:
  sse::parser parser_;
  bool stopped_ = false;
  std::optional<reported_usage> usage_;
};

}  // namespace sluice::proxy
