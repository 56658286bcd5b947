// Parses and checks an OpenAI request body before anything is sent upstream: malformed JSON or a
// wrongly typed field becomes a 400 naming the field (`param`). Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "core/error.hpp"

namespace sluice::proxy {

enum class api { chat_completions, completions };

struct request_summary {
  std::string model;
  bool stream = false;
  bool include_usage = false;     // stream_options.include_usage
  std::uint64_t max_tokens = 0;   // 0 = not given
  std::size_t prompt_chars = 0;   // rough size of the prompt, for later cost estimates
};

result<request_summary> validate_request(api which, std::string_view body);

}  // namespace sluice::proxy
