// A Messages API request (POST /v1/messages) translated into a chat-completions request for an
// OpenAI-compatible upstream: system, text and image content blocks, tool_use and tool_result
// blocks, tools and tool_choice, stop_sequences, sampling numbers, stream (with usage asked for, so
// the translated stream can report it). Pure; docs/dialects.md has the mapping.
#pragma once

#include <boost/json/object.hpp>

#include "core/error.hpp"

namespace sluice::dialects {

// The chat-completions body, or a bad_request naming the field (`param`) the client got wrong.
// Every number from the client is range-checked here: max_tokens in [1, 2^31), temperature in
// [0, 1], top_p in [0, 1], top_k refused (chat completions has none).
result<boost::json::object> chat_request_of(const boost::json::object& messages_request);

}  // namespace sluice::dialects
