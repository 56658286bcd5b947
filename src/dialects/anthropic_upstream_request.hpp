// A chat-completions request (POST /v1/chat/completions) translated into a Messages API request
// for an Anthropic upstream: system and developer messages as the top-level system prompt, text and
// image parts, tool calls and tool results as tool_use and tool_result blocks, tools and
// tool_choice, stop, sampling numbers, max tokens (which the Messages API requires), structured
// output and reasoning effort. The reverse of anthropic_request.hpp. Pure; docs/dialects.md, "An
// Anthropic upstream behind /v1/chat/completions", has the mapping and what is refused or dropped.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>

#include "core/error.hpp"

namespace sluice::dialects {

struct messages_request_options {
  std::uint64_t default_max_tokens = 4096;  // max_tokens when the chat request names none (Messages requires one)
};

// The Messages API body, or a bad_request (error::make(errc::bad_request, message, param)) naming
// the field it cannot carry, e.g. `messages.2.content.1.type` or `temperature`. Every number from
// the client is range-checked: max_completion_tokens and max_tokens in [1, 2^31), temperature and
// top_p in [0, 1] (the Messages API's ranges; OpenAI's temperature reaches 2).
result<boost::json::object> messages_request_of(const boost::json::object& chat_request, const messages_request_options& opts);

}  // namespace sluice::dialects
