#include "core/openai_duration.hpp"

#include <chrono>
#include <cstdint>

namespace sluice {
namespace {

constexpr std::int64_t ns_per_second = 1'000'000'000;
constexpr std::int64_t week_ns = 7 * 86'400 * ns_per_second;

// Nanoseconds per unit; 0 for a unit OpenAI does not write.
std::int64_t unit_ns(std::string_view unit) {
  if (unit == "h") return 3'600 * ns_per_second;
  if (unit == "m") return 60 * ns_per_second;
  if (unit == "s" || unit.empty()) return ns_per_second;  // a bare number is seconds (retry-after style)
  if (unit == "ms") return 1'000'000;
  if (unit == "us") return 1'000;
  if (unit == "ns") return 1;
  return 0;
}

bool is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// A fraction of one unit (`scale` ns), given in 10^-18 of the unit, as whole nanoseconds plus
// billionths of a nanosecond. Split so that no product leaves 64 bits.
struct ns_and_sub {
  std::int64_t ns, sub;
};
ns_and_sub fraction_ns(std::int64_t f, std::int64_t scale) {
  if (scale >= ns_per_second) {  // h, m, s: whole seconds per unit
    const std::int64_t per = scale / ns_per_second;
    const std::int64_t hi = f / ns_per_second, lo = f % ns_per_second;
    return {hi * per + lo * per / ns_per_second, lo * per % ns_per_second};
  }
  const std::int64_t units_per_second = ns_per_second / scale;  // ms, us, ns
  const std::int64_t d = units_per_second * ns_per_second;      // 10^18 / scale
  return {f / d, f % d / units_per_second};
}

}  // namespace

std::optional<duration> parse_openai_duration(std::string_view text) {
  if (text.empty() || text.size() > 64) return std::nullopt;
  // Decimal arithmetic in integers, not strtod: "59.999s" must read back as 59999ms exactly, not a
  // nanosecond short. The sum is kept to a billionth of a nanosecond and truncated once at the end.
  std::int64_t total = 0, total_sub = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    std::int64_t whole = 0;
    std::int64_t fraction = 0;  // in 10^-18 of the unit
    int fraction_digits = 0;
    bool digits = false, dot = false;
    for (; i < text.size(); ++i) {
      const char c = text[i];
      if (c == '.') {
        if (dot) return std::nullopt;
        dot = true;
        continue;
      }
      if (c < '0' || c > '9') break;
      digits = true;
      if (!dot) {
        if (whole > week_ns) return std::nullopt;  // over a week in any unit; stops the overflow too
        whole = whole * 10 + (c - '0');
      } else if (fraction_digits < 18) {  // beyond: below 10^-5 ns even for hours
        fraction = fraction * 10 + (c - '0');
        ++fraction_digits;
      }
    }
    if (!digits) return std::nullopt;
    for (int k = fraction_digits; k < 18; ++k) fraction *= 10;
    const std::size_t unit_start = i;
    while (i < text.size() && is_alpha(text[i])) ++i;
    const std::string_view unit = text.substr(unit_start, i - unit_start);
    const std::int64_t scale = unit_ns(unit);
    if (scale == 0) return std::nullopt;
    if (unit.empty() && i != text.size()) return std::nullopt;  // "3 s": a bare number ends the text
    if (whole > week_ns / scale) return std::nullopt;
    const auto part = fraction_ns(fraction, scale);
    total += whole * scale + part.ns;
    total_sub += part.sub;
    if (total_sub >= ns_per_second) {
      total += 1;
      total_sub -= ns_per_second;
    }
    if (total > week_ns || (total == week_ns && total_sub > 0)) return std::nullopt;
  }
  return duration(total);
}

std::string format_openai_duration(duration d) {
  if (d <= duration::zero()) return "0s";
  const auto total_ms = std::chrono::ceil<std::chrono::milliseconds>(d).count();
  if (total_ms < 1000) return std::to_string(total_ms) + "ms";
  const auto h = total_ms / 3'600'000;
  const auto m = (total_ms / 60'000) % 60;
  const auto s = (total_ms / 1000) % 60;
  const auto frac = total_ms % 1000;
  std::string out;
  if (h > 0) out += std::to_string(h) + "h";
  if (h > 0 || m > 0) out += std::to_string(m) + "m";
  out += std::to_string(s);
  if (frac > 0) {
    std::string f = std::to_string(frac);
    f.insert(0, 3 - f.size(), '0');
    while (f.back() == '0') f.pop_back();
    out += "." + f;
  }
  return out + "s";
}

}  // namespace sluice
