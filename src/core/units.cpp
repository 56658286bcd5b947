#include "core/units.hpp"

#include <array>
#include <cmath>
#include <cstdio>
#include <utility>

namespace sluice {
namespace {

// Splits "12.5ms" into (12.5, "ms"). Rejects signs, exponents, empty numbers and trailing junk.
bool split_number(std::string_view text, double& number, std::string_view& unit) {
  std::size_t i = 0;
  bool digits = false, dot = false;
  double whole = 0, frac = 0, scale = 1;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (c >= '0' && c <= '9') {
      digits = true;
      if (dot) {
        scale /= 10;
        frac += (c - '0') * scale;
      } else {
        whole = whole * 10 + (c - '0');
      }
    } else if (c == '.' && !dot) {
      dot = true;
    } else {
      break;
    }
  }
  if (!digits) return false;
  number = whole + frac;
  unit = text.substr(i);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  return true;
}

}  // namespace

result<duration> parse_duration(std::string_view text) {
  double n = 0;
  std::string_view unit;
  if (!split_number(text, n, unit))
    return error::make(errc::bad_request, "invalid duration '" + std::string(text) + "' (expected e.g. 500ms, 2s, 5m)");
  static constexpr std::array<std::pair<std::string_view, double>, 6> units{{
      {"ns", 1.0}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"h", 3600e9}}};
  for (auto [name, ns] : units) {
    if (unit == name) {
      double total = n * ns;
      if (total > 1e18) return error::make(errc::bad_request, "duration '" + std::string(text) + "' is too large");
      return duration(static_cast<std::int64_t>(std::llround(total)));
    }
  }
  return error::make(errc::bad_request,
                     "invalid duration '" + std::string(text) + "': unit must be one of ns, us, ms, s, m, h");
}

result<std::uint64_t> parse_size(std::string_view text) {
  double n = 0;
  std::string_view unit;
  if (!split_number(text, n, unit))
    return error::make(errc::bad_request, "invalid size '" + std::string(text) + "' (expected e.g. 64KiB, 128MiB)");
  static constexpr std::array<std::pair<std::string_view, double>, 10> units{{
      {"", 1.0}, {"B", 1.0},
      {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
      {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}}};
  for (auto [name, mult] : units) {
    if (unit == name) {
      double total = n * mult;
      if (total > 9e18) return error::make(errc::bad_request, "size '" + std::string(text) + "' is too large");
      if (total != std::floor(total))
        return error::make(errc::bad_request, "size '" + std::string(text) + "' is not a whole number of bytes");
      return static_cast<std::uint64_t>(total);
    }
  }
  return error::make(errc::bad_request, "invalid size '" + std::string(text) +
                                            "': unit must be one of B, KiB, MiB, GiB, TiB, KB, MB, GB, TB");
}

std::string format_duration(duration d) {
  auto ns = d.count();
  char buf[64];
  if (ns % 3600'000'000'000LL == 0 && ns != 0) std::snprintf(buf, sizeof buf, "%lldh", static_cast<long long>(ns / 3600'000'000'000LL));
  else if (ns % 60'000'000'000LL == 0 && ns != 0) std::snprintf(buf, sizeof buf, "%lldm", static_cast<long long>(ns / 60'000'000'000LL));
  else if (ns % 1'000'000'000LL == 0) std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(ns / 1'000'000'000LL));
  else if (ns % 1'000'000LL == 0) std::snprintf(buf, sizeof buf, "%lldms", static_cast<long long>(ns / 1'000'000LL));
  else if (ns % 1'000LL == 0) std::snprintf(buf, sizeof buf, "%lldus", static_cast<long long>(ns / 1'000LL));
  else std::snprintf(buf, sizeof buf, "%lldns", static_cast<long long>(ns));
  return buf;
}

std::string format_size(std::uint64_t bytes) {
  static constexpr std::array<std::pair<const char*, std::uint64_t>, 4> units{{
      {"TiB", 1ULL << 40}, {"GiB", 1ULL << 30}, {"MiB", 1ULL << 20}, {"KiB", 1ULL << 10}}};
  for (auto [name, mult] : units)
    if (bytes >= mult && bytes % mult == 0) return std::to_string(bytes / mult) + name;
  return std::to_string(bytes) + "B";
}

}  // namespace sluice
