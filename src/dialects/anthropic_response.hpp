// A whole chat completion (`chat.completion`) translated into a Messages API answer (`message`):
// the first choice's reasoning, text and tool calls as content blocks, the stop reason and usage
// mapped as the stream translator maps them (docs/dialects.md). Pure.
#pragma once

#include <boost/json/object.hpp>

#include "core/error.hpp"
#include "dialects/anthropic_stream.hpp"

namespace sluice::dialects {

// The message, or an upstream_protocol error when the completion has no choice to translate or a
// tool call's arguments are not a JSON object.
result<boost::json::object> message_of(const boost::json::object& chat_completion, const message_start_info& info);

}  // namespace sluice::dialects
