// The conversation part of messages_request_of (anthropic_upstream_request.hpp): a chat request's
// `messages` array as the Messages API's top-level `system` and its `messages` turns; and the two
// helpers both halves of that translation use. Internal to the dialects module; pure.
#pragma once

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

// Sets out["system"] (when a system or developer message has text) and out["messages"], or a
// bad_request naming the field (e.g. messages.2.content.1.type). `messages` may be null (absent).
result<void> translate_chat_messages(const boost::json::value* messages, boost::json::object& out);

}  // namespace sluice::dialects
