// RFC 3339 timestamps as Anthropic's rate-limit headers write them
// (anthropic-ratelimit-requests-reset: "2026-12-06T23:40:05Z"): the reader for the gateway's pacer
// (routing) and the writer for the simulator. Pure functions, safe on any thread.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace sluice {

using sys_time = std::chrono::system_clock::time_point;

// "YYYY-MM-DDTHH:MM:SS" with an optional fraction (at most 9 digits) and a zone of "Z" or
// "+HH:MM"/"-HH:MM" ('t' and 'z' and a space for 'T' accepted too). Nullopt on anything else: a
// field out of its range (February 30th included), a year before 1970 or after 9999, extra text.
std::optional<sys_time> parse_rfc3339(std::string_view text);

// "YYYY-MM-DDTHH:MM:SSZ" in UTC, rounded *up* to the second (a reset a moment away must not read
// as already past).
std::string format_rfc3339(sys_time t);

}  // namespace sluice
