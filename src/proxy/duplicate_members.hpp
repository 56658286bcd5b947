// duplicate_members: finds a member name written twice in one JSON object of a request body. A
// parser keeps one of the two copies (Boost.JSON the last, others the first), so the gateway would
// check one copy while an upstream acts on the other: such a body is refused (docs/security.md).
// Pure functions of their arguments; any thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <boost/json/value.hpp>

namespace sluice::proxy {

// Members of every object in a parsed document (a repeated name counts once: the parse kept one).
std::size_t parsed_members(const boost::json::value& v) noexcept;

// Members written in `text`, a well-formed JSON document: its name separators (':' outside strings).
std::size_t written_members(std::string_view text) noexcept;

// The path of the first member whose name repeats within its object (`text.format`,
// `messages[2].content`), read from `text`; nullopt when none does or `text` is not well-formed.
std::optional<std::string> duplicate_member(std::string_view text);

}  // namespace sluice::proxy
