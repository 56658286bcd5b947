// Human units for durations ("500ms", "2s", "5m", "1h") and byte sizes ("64KiB", "128MiB", "4096").
// Pure functions; used by config parsing and by every subcommand's flags.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace sluice {

using duration = std::chrono::nanoseconds;

// Accepts an unsigned decimal number (fractions allowed, e.g. "1.5s") followed by one of
// ns, us, ms, s, m, h. A bare number is rejected: a duration always names its unit.
result<duration> parse_duration(std::string_view text);

// Accepts an unsigned integer with an optional unit: B, KiB, MiB, GiB, TiB (binary) or
// KB, MB, GB, TB (decimal). A bare number means bytes.
result<std::uint64_t> parse_size(std::string_view text);

// The inverse, for logs and docs: "64KiB", "1.5s", "250ms".
std::string format_duration(duration d);
std::string format_size(std::uint64_t bytes);

}  // namespace sluice
