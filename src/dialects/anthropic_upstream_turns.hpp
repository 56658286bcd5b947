// The conversation part of messages_request_of (anthropic_upstream_request.hpp): a chat request's
// `messages` array as the Messages API's top-level `system` and its `messages` turns; and the
// helpers that it, the rest of the request and the Responses API's input items
// (anthropic_upstream_responses_input.hpp) share. Internal to the dialects module; pure.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace sluice::dialects {

// A bad_request naming the field (`param`) the client got wrong.
inline error refused(std::string message, std::string param) {
  return error::make(errc::bad_request, std::move(message), std::move(param));
}

// A member that is there and not null: a chat client's explicit null means "the default".
inline const boost::json::value* present(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && !v->is_null() ? v : nullptr;
}

// An image URL as a Messages image block: a data:<media type>;base64,<data> URL as a base64
// source, an http(s) URL as a url source; anything else refused naming `param`.
result<boost::json::object> image_block_of_url(std::string_view url, const std::string& param);

// A tool call's arguments (a JSON string; null, absent or empty meaning {}) parsed as a tool_use
// block's input, which must be a JSON object; refused naming `param` otherwise.
result<boost::json::value> tool_input_of(const boost::json::value* arguments, const std::string& param);

// The names one front end gives a user's content parts, and how it reads an image part.
struct user_part_kinds {
  std::string_view text;   // "text" (chat completions) or "input_text" (Responses)
  std::string_view image;  // "image_url" or "input_image"
  result<boost::json::object> (*image_block)(const boost::json::object& part, const std::string& param);
};

// A user's content parts as Messages text and image blocks; an empty array, a part without a
// type and a part of another type (audio, files, kinds added later) are refused naming it.
result<boost::json::array> user_content_blocks(const boost::json::array& parts, const std::string& param, const user_part_kinds& kinds);

// A user turn appended to `turns`: string content as it is, an array of parts through `parts` (each
// front end reads its own part types); anything else refused naming param + ".content".
using user_parts_reader = result<boost::json::array> (*)(const boost::json::array& parts, const std::string& param);
result<void> add_user_turn(const boost::json::value* content, const std::string& param, user_parts_reader parts, boost::json::array& turns);

// Sets out["system"] (when a system or developer message has text) and out["messages"], or a
// bad_request naming the field (e.g. messages.2.content.1.type). `messages` may be null (absent).
result<void> translate_chat_messages(const boost::json::value* messages, boost::json::object& out);

}  // namespace sluice::dialects
