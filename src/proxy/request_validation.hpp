// Parses and checks an OpenAI request body before anything is sent upstream: malformed JSON, a
// number that does not fit a double, or a wrongly typed field becomes a 400 naming the field
// (`param`). What later steps need is copied out of the short-lived parse. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/value.hpp>

#include "core/error.hpp"
#include "proxy/api.hpp"
#include "proxy/structured/schema_requests.hpp"

namespace sluice::proxy {

struct request_summary {
  std::string model;
  bool stream = false;
  bool include_usage = false;     // stream_options.include_usage
  bool background = false;        // responses: run as a background job (docs/queue.md)
  bool store = true;              // responses: `store` (OpenAI's default is true)
  std::string previous_response_id;  // responses: the response this one continues ("" = none)
  std::uint64_t max_tokens = 0;   // 0 = not given
  std::size_t prompt_chars = 0;   // rough size of the prompt, for later cost estimates
  std::optional<output_schema_request> output_schema;  // structured outputs: the requested schema
  std::vector<tool_schema_request> tool_schemas;      // function tools with parameters, in request order
};

// A non-finite number anywhere in the body (Boost.JSON reads 1e400 as infinity) is a 400 naming
// its path in OpenAI's form (`temperature`, `messages[0].content`, `tools[1].function.parameters...`).
// tools: an array of objects; a `type: "function"` tool's parameters (chat: under `function`) an
// object or a boolean when present. Legacy completions have no tools.
result<request_summary> validate_request(api which, std::string_view body);

}  // namespace sluice::proxy
