#include "core/rfc3339.hpp"

#include <cstdio>

namespace sluice {

namespace {

// `n` decimal digits at text[at...]; nullopt when any is not a digit.
std::optional<int> digits(std::string_view text, std::size_t at, std::size_t n) {
  if (at + n > text.size()) return std::nullopt;
  int v = 0;
  for (std::size_t i = at; i < at + n; ++i) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    v = v * 10 + (text[i] - '0');
  }
  return v;
}

// The fraction at text[at...] (after the '.'), as nanoseconds; `at` moves past it.
std::optional<std::chrono::nanoseconds> fraction(std::string_view text, std::size_t& at) {
  std::int64_t ns = 0, scale = 100'000'000;
  const std::size_t from = at;
  while (at < text.size() && text[at] >= '0' && text[at] <= '9') {
    if (at - from == 9) return std::nullopt;
    ns += (text[at] - '0') * scale;
    scale /= 10;
    ++at;
  }
  if (at == from) return std::nullopt;
  return std::chrono::nanoseconds(ns);
}

// The zone at text[at...] to the end: "Z", or "+HH:MM" / "-HH:MM" as the offset east of UTC.
std::optional<std::chrono::minutes> zone(std::string_view text, std::size_t at) {
  if (at + 1 == text.size() && (text[at] == 'Z' || text[at] == 'z')) return std::chrono::minutes(0);
  if (at + 6 != text.size() || (text[at] != '+' && text[at] != '-') || text[at + 3] != ':') return std::nullopt;
  const auto h = digits(text, at + 1, 2), m = digits(text, at + 4, 2);
  if (!h || !m || *h > 23 || *m > 59) return std::nullopt;
  const std::chrono::minutes off(*h * 60 + *m);
  return text[at] == '-' ? -off : off;
}

}  // namespace

std::optional<sys_time> parse_rfc3339(std::string_view text) {
  using namespace std::chrono;
  if (text.size() < 20 || text.size() > 40) return std::nullopt;
  const auto y = digits(text, 0, 4), mo = digits(text, 5, 2), d = digits(text, 8, 2);
  const auto h = digits(text, 11, 2), mi = digits(text, 14, 2), s = digits(text, 17, 2);
  const char t = text[10];
  if (!y || !mo || !d || !h || !mi || !s || text[4] != '-' || text[7] != '-' || text[13] != ':' || text[16] != ':' ||
      (t != 'T' && t != 't' && t != ' '))
    return std::nullopt;
  const year_month_day date{year{*y}, month{static_cast<unsigned>(*mo)}, day{static_cast<unsigned>(*d)}};
  if (*y < 1970 || !date.ok() || *h > 23 || *mi > 59 || *s > 60) return std::nullopt;  // 60: a leap second
  std::size_t at = 19;
  nanoseconds frac{0};
  if (at < text.size() && text[at] == '.') {
    auto f = fraction(text, ++at);
    if (!f) return std::nullopt;
    frac = *f;
  }
  const auto off = zone(text, at);
  if (!off) return std::nullopt;
  const auto local = sys_days(date) + hours(*h) + minutes(*mi) + seconds(*s) + frac;
  return time_point_cast<system_clock::duration>(local - *off);
}

std::string format_rfc3339(sys_time t) {
  using namespace std::chrono;
  auto secs = ceil<seconds>(t);
  const auto day = floor<days>(secs);
  const year_month_day date{day};
  const hh_mm_ss<seconds> tod{secs - day};
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02lld:%02lld:%02lldZ", static_cast<int>(date.year()),
                static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()),
                static_cast<long long>(tod.hours().count()), static_cast<long long>(tod.minutes().count()),
                static_cast<long long>(tod.seconds().count()));
  return buf;
}

}  // namespace sluice
