// The schemas a request carries, as request validation copies them out of its parse for structured
// outputs to compile (structured_output.hpp).
#pragma once

#include <cstdint>
#include <string>

#include <boost/json/value.hpp>

namespace sluice::proxy {

// The JSON schema a request asks its output to follow (chat and legacy completions
// `response_format.json_schema`, responses `text.format`); see structured_output.hpp.
struct output_schema_request {
  boost::json::value schema;  // an owned copy
  std::string param;          // where it sits in the request: "response_format.json_schema.schema"
  std::string name;
  bool strict = false;
  std::uint64_t choices = 1;  // the request's `n` (chat, completions): each choice's output is checked
};

// A function tool's parameter schema (chat `tools[i].function.parameters`, responses
// `tools[i].parameters`). Compiled only to check it before it goes upstream (structured_output.hpp,
// check_tool_schemas); nothing is validated against it.
struct tool_schema_request {
  boost::json::value schema;  // an owned copy
  std::string param;          // where it sits in the request: "tools[0].function.parameters"
  std::string name;           // the function's name ("" when it has none)
};

}  // namespace sluice::proxy
