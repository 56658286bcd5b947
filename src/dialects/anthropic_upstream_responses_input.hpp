// The conversation part of messages_request_of_responses (anthropic_upstream_responses_request.hpp):
// a Responses API request's `instructions` and `input` (a string, or an array of items: messages,
// function calls and their outputs, reasoning) as the Messages API's top-level `system` and its
// `messages` turns. Internal to the dialects module; pure.
#pragma once

#include <boost/json/object.hpp>

#include "core/error.hpp"

namespace sluice::dialects {

// Sets out["system"] (instructions, then the system and developer messages, joined by a blank
// line) and out["messages"], or a bad_request naming the field (e.g. input.3.content.0.type).
// Consecutive function_call items join the assistant turn before them, consecutive
// function_call_output items make one user turn of tool results, as the chat translation gathers
// tool calls and tool messages.
result<void> translate_responses_input(const boost::json::object& request, boost::json::object& out);

}  // namespace sluice::dialects
