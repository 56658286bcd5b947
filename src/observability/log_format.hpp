// Internal to observability/: one log line rendered as JSON or as text (key=value), with the
// escaping both need (control characters, invalid UTF-8, quotes). Pure; thread-safe.
#pragma once

#include <chrono>
#include <span>
#include <string>
#include <string_view>

#include "observability/log.hpp"

namespace sluice::obs::detail {

// `s` as a JSON string literal: control characters escaped, invalid UTF-8 written as U+FFFD.
void append_json_quoted(std::string& out, std::string_view s);

std::string render(bool json, std::chrono::system_clock::time_point t, std::string_view level, std::string_view msg,
                   std::span<const log_field> fields);

}  // namespace sluice::obs::detail
