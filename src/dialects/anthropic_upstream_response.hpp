// A whole answer of an Anthropic upstream (a Messages API `message`, or its error body) translated
// for a client of /v1/chat/completions: a `chat.completion`, OpenAI's error shape, the status.
// The stop reason and usage are mapped as the stream maps them (anthropic_upstream_common.hpp;
// docs/dialects.md has the tables). Pure.
#pragma once

#include <boost/json/object.hpp>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "dialects/anthropic_upstream_stream.hpp"

namespace sluice::dialects {

// A whole Messages answer (`message`) → a `chat.completion`: its text blocks joined into
// `content` (null when there is none), thinking blocks into `reasoning_content`, tool_use blocks as
// `tool_calls` (input serialised as arguments), finish_reason and usage as the stream maps them.
// Redacted thinking and server tools' blocks are dropped. An upstream_protocol error when the body
// is not a message (no content array, a block that is not an object, a tool_use without its id,
// name or object input).
result<boost::json::object> chat_completion_of(const boost::json::object& message, const chunk_start_info& info);

// An upstream's Messages-shaped error body ({"type":"error","error":{"type","message"}}) →
// OpenAI's {"error":{"message","type","param":null,"code"}}, keeping the message (type and code:
// openai_error_kind_of). A body that is not such an error keeps no text of it (it may be an HTML
// page): the message then says what the status means.
std::string openai_error_body_of_messages(unsigned status, std::string_view anthropic_body);

// The status an OpenAI client sees for an Anthropic upstream's status: 529 (overloaded, a status
// OpenAI clients do not know) → 503; others unchanged.
unsigned openai_status_of_messages(unsigned status) noexcept;

}  // namespace sluice::dialects
