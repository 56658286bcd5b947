// The member names and type strings that event_scan's two readers (the skim and the SAX scan,
// event_scan.cpp) look for in a streamed event, classified once for both.
#pragma once

#include <cstdint>
#include <string_view>

#include "proxy/relay/event_scan.hpp"

namespace sluice::proxy::event_names {

enum class top_key : std::uint8_t { other, choices, usage, error, type, response, sequence_number };
enum class usage_key : std::uint8_t { other, completion_tokens, prompt_tokens, output_tokens, input_tokens };

// By length first: most names of a chat chunk (id, object, created, model, ...) are ruled out by it
// without a comparison.
inline top_key classify_top(std::string_view n) noexcept {
  switch (n.size()) {
    case 4: return n == "type" ? top_key::type : top_key::other;
    case 5: return n == "usage" ? top_key::usage : n == "error" ? top_key::error : top_key::other;
    case 7: return n == "choices" ? top_key::choices : top_key::other;
    case 8: return n == "response" ? top_key::response : top_key::other;
    case 15: return n == "sequence_number" ? top_key::sequence_number : top_key::other;
    default: return top_key::other;
  }
}

inline usage_key classify_usage(std::string_view n) noexcept {
  switch (n.size()) {
    case 17: return n == "completion_tokens" ? usage_key::completion_tokens : usage_key::other;
    case 13:
      return n == "prompt_tokens" ? usage_key::prompt_tokens
             : n == "output_tokens" ? usage_key::output_tokens
                                    : usage_key::other;
    case 12: return n == "input_tokens" ? usage_key::input_tokens : usage_key::other;
    default: return usage_key::other;
  }
}

// The value of a top-level "type" string, as event_facts names it (none when it is not one it names).
inline event_facts::type_kind classify_type(std::string_view v) noexcept {
  using t = event_facts::type_kind;
  if (v == "response.completed") return t::completed;
  if (v == "response.incomplete") return t::incomplete;
  if (v == "response.failed") return t::failed;
  if (v == "error") return t::error;
  if (v == "response.output_text.delta" || v == "response.refusal.delta" ||
      v == "response.function_call_arguments.delta")
    return t::text_delta;
  return t::none;
}

// The usage count a name inside a usage object stands for: one of `counts` (completion, prompt,
// output, input), or nullptr when it is none of them.
inline std::int64_t* usage_slot(usage_key k, std::int64_t* counts) noexcept {
  switch (k) {
    case usage_key::completion_tokens: return counts;
    case usage_key::prompt_tokens: return counts + 1;
    case usage_key::output_tokens: return counts + 2;
    case usage_key::input_tokens: return counts + 3;
    case usage_key::other: return nullptr;
  }
  return nullptr;
}

// The end of a read: the usage counts into `f`, the top-level usage object's (`top`, when
// f.usage_object) or else the response object's (`nested`, when `response_usage` saw one).
inline void finish_usage(event_facts& f, const std::int64_t* top, const std::int64_t* nested, bool response_usage) noexcept {
  const std::int64_t* counts = f.usage_object ? top : nullptr;
  if (counts == nullptr && response_usage) {
    f.usage_object = true;
    counts = nested;
  }
  if (counts == nullptr) return;
  f.completion_tokens = counts[0];
  f.prompt_tokens = counts[1];
  f.output_tokens = counts[2];
  f.input_tokens = counts[3];
}

}  // namespace sluice::proxy::event_names
