// A whole answer of an Anthropic upstream (a Messages API `message`) translated for a client of
// POST /v1/responses: a `response` object whose output items, status and usage are what the
// stream (anthropic_upstream_responses_stream.hpp) ends with for the same answer (the items, ids
// and status come from one place: anthropic_upstream_responses_object.hpp). An error body reuses
// openai_error_body_of_messages and openai_status_of_messages (anthropic_upstream_response.hpp).
// Pure; docs/dialects.md, "/v1/responses", has the mapping.
#pragma once

#include <boost/json/object.hpp>

#include "core/error.hpp"
#include "dialects/anthropic_upstream_responses_stream.hpp"

namespace sluice::dialects {

// A whole Messages answer → a Responses `response` object: each text block a `message` item with
// one output_text part, each thinking block a `reasoning` item (its signature dropped), each
// tool_use block a `function_call` item (call_id the tool_use id, input serialised as
// arguments), in order, with output_index 0, 1, 2...; redacted thinking and server tools' blocks
// dropped. Status completed, or incomplete with incomplete_details.reason "max_output_tokens"
// (stop_reason max_tokens, model_context_window_exceeded) or "content_filter" (refusal). An
// upstream_protocol error when the body is not a message (another type, no content array, a block
// that is not an object, a tool_use without its id, name or object input).
result<boost::json::object> response_of_message(const boost::json::object& message, const response_start_info& info);

}  // namespace sluice::dialects
