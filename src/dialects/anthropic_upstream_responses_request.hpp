// A Responses API request (POST /v1/responses) translated into a Messages API request for an
// Anthropic upstream: instructions and system/developer input as the top-level system prompt,
// input messages, function calls and their outputs as turns with tool_use and tool_result blocks,
// function tools and tool_choice, max_output_tokens (the Messages API requires a max_tokens),
// sampling numbers, text.format json_schema and reasoning.effort as output_config. Pure; the
// fields both this and the chat translation carry are one code path
// (anthropic_upstream_request_fields.hpp). docs/dialects.md, "/v1/responses", has the mapping and
// what is refused or dropped.
#pragma once

#include <boost/json/object.hpp>

#include "core/error.hpp"
#include "dialects/anthropic_upstream_request.hpp"

namespace sluice::dialects {

// The Messages API body, or a bad_request (error::make(errc::bad_request, message, param)) naming
// the field it cannot carry, e.g. `input.2.content.1.type`, `tools.0.type` or
// `previous_response_id` (an Anthropic upstream keeps no conversation state). Numbers are
// range-checked as for chat: max_output_tokens in [1, 2^31), temperature and top_p in [0, 1].
// opts.default_max_tokens is max_tokens when the request names no max_output_tokens.
result<boost::json::object> messages_request_of_responses(const boost::json::object& responses_request,
                                                          const messages_request_options& opts);

}  // namespace sluice::dialects
