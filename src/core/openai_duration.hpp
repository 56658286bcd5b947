// OpenAI's duration text, as its x-ratelimit-reset-* headers write it (Go's time.Duration format):
// "20ms", "1s", "1.5s", "6m0s", "1m30.5s", "2h0m0s". One codec for the gateway's reader (routing),
// its writer (admission's per-key headers) and the simulator. Pure functions, safe on any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/units.hpp"

namespace sluice {

// Components of h, m, s, ms, us or ns, each an unsigned decimal (fractions allowed), summed; a
// bare number is seconds (the retry-after style), but only as the last component. The decimal sum
// is exact (to 18 fraction digits) and truncated to the nanosecond once, so what
// format_openai_duration writes reads back as exactly the duration it wrote. Nullopt on anything
// else, on text longer than 64 characters and on totals above a week (no rate-limit reset is that
// far off: it is garbage).
std::optional<duration> parse_openai_duration(std::string_view text);

// "0s" for zero and negative durations; below a second whole milliseconds ("250ms"); else
// [<h>h<m>m]<s>[.<fraction>]s with the fraction to the millisecond, trailing zeros dropped. Rounded
// *up* to the millisecond: a reset 0.3ms away must not read "0s" (already reset), and a client told
// to wait should never be told a moment too little.
std::string format_openai_duration(duration d);

}  // namespace sluice
