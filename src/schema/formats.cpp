#include "schema/formats.hpp"

#include <array>

namespace sluice::schema::detail {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// Reads exactly n ASCII digits at s[pos]; -1 when they are not all digits.
int digits(std::string_view s, std::size_t pos, std::size_t n) {
  if (pos + n > s.size()) return -1;
  int v = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!is_digit(s[pos + i])) return -1;
    v = v * 10 + (s[pos + i] - '0');
  }
  return v;
}

bool leap_year(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

// RFC 3339 full-time: HH:MM:SS[.frac](Z|+HH:MM|-HH:MM). A leap second (:60) is valid only when
// the instant is 23:59:60 in UTC, i.e. after removing the offset.
bool full_time(std::string_view s) {
  int h = digits(s, 0, 2), m = digits(s, 3, 2), sec = digits(s, 6, 2);
  if (h < 0 || m < 0 || sec < 0 || s[2] != ':' || s[5] != ':') return false;
  if (h > 23 || m > 59 || sec > 60) return false;
  std::size_t i = 8;
  if (i < s.size() && s[i] == '.') {
    std::size_t start = ++i;
    while (i < s.size() && is_digit(s[i])) ++i;
    if (i == start) return false;
  }
  if (i >= s.size()) return false;
  int offset_minutes = 0;
  if (s[i] == 'Z' || s[i] == 'z') {
    if (i + 1 != s.size()) return false;
  } else if (s[i] == '+' || s[i] == '-') {
    if (i + 6 != s.size()) return false;
    int oh = digits(s, i + 1, 2), om = digits(s, i + 4, 2);
    if (oh < 0 || om < 0 || s[i + 3] != ':' || oh > 23 || om > 59) return false;
    offset_minutes = (oh * 60 + om) * (s[i] == '+' ? 1 : -1);
  } else {
    return false;
  }
  if (sec == 60) {
    int utc = ((h * 60 + m - offset_minutes) % 1440 + 1440) % 1440;
    if (utc != 23 * 60 + 59) return false;
  }
  return true;
}

bool full_date(std::string_view s) {
  if (s.size() != 10 || s[4] != '-' || s[7] != '-') return false;
  int y = digits(s, 0, 4), mo = digits(s, 5, 2), d = digits(s, 8, 2);
  if (y < 0 || mo < 1 || mo > 12 || d < 1) return false;
  static constexpr std::array<int, 12> days{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  int max = days[static_cast<std::size_t>(mo - 1)] + (mo == 2 && leap_year(y) ? 1 : 0);
  return d <= max;
}

bool is_atext(char c) {
  if (is_alpha(c) || is_digit(c)) return true;
  switch (c) {
    case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+': case '-': case '/':
    case '=': case '?': case '^': case '_': case '`': case '{': case '|': case '}': case '~':
      return true;
    default:
      return false;
  }
}

bool is_unreserved(char c) { return is_alpha(c) || is_digit(c) || c == '-' || c == '.' || c == '_' || c == '~'; }
bool is_sub_delim(char c) {
  switch (c) {
    case '!': case '$': case '&': case '\'': case '(': case ')': case '*': case '+': case ',': case ';': case '=':
      return true;
    default:
      return false;
  }
}

// Checks s is made of `allowed` characters and well-formed %XX escapes.
template <class Allowed>
bool uri_chars(std::string_view s, Allowed allowed) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%') {
      if (i + 2 >= s.size() || !is_hex(s[i + 1]) || !is_hex(s[i + 2])) return false;
      i += 2;
    } else if (!allowed(s[i])) {
      return false;
    }
  }
  return true;
}

bool is_pchar(char c) { return is_unreserved(c) || is_sub_delim(c) || c == ':' || c == '@'; }

bool uri_authority(std::string_view a) {
  std::size_t at = a.find('@');
  if (at != std::string_view::npos) {
    if (!uri_chars(a.substr(0, at), [](char c) { return is_unreserved(c) || is_sub_delim(c) || c == ':'; }))
      return false;
    a.remove_prefix(at + 1);
  }
  std::string_view port;
  if (!a.empty() && a.front() == '[') {
    std::size_t close = a.find(']');
    if (close == std::string_view::npos) return false;
    std::string_view literal = a.substr(1, close - 1);
    bool future = !literal.empty() && (literal[0] == 'v' || literal[0] == 'V');
    if (!future && !is_ipv6(literal)) return false;
    std::string_view rest = a.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return false;
      port = rest.substr(1);
    }
  } else {
    std::size_t colon = a.find(':');
    if (colon != std::string_view::npos) {
      port = a.substr(colon + 1);
      a = a.substr(0, colon);
    }
    if (!uri_chars(a, [](char c) { return is_unreserved(c) || is_sub_delim(c); })) return false;
  }
  for (char c : port)
    if (!is_digit(c)) return false;
  return true;
}

}  // namespace

bool is_date(std::string_view s) noexcept { return full_date(s); }
bool is_time(std::string_view s) noexcept { return full_time(s); }

bool is_date_time(std::string_view s) noexcept {
  if (s.size() < 11 || (s[10] != 'T' && s[10] != 't')) return false;
  return full_date(s.substr(0, 10)) && full_time(s.substr(11));
}

bool is_email(std::string_view s) noexcept {
  std::size_t at = s.rfind('@');
  if (at == std::string_view::npos || at == 0 || at + 1 == s.size()) return false;
  std::string_view local = s.substr(0, at), domain = s.substr(at + 1);
  if (local.front() == '"') {
    if (local.size() < 2 || local.back() != '"') return false;
    for (std::size_t i = 1; i + 1 < local.size(); ++i) {
      char c = local[i];
      if (c == '\\') {
        if (++i + 1 >= local.size()) return false;
      } else if (c == '"' || static_cast<unsigned char>(c) < 32 || static_cast<unsigned char>(c) > 126) {
        return false;
      }
    }
  } else {
    if (local.front() == '.' || local.back() == '.') return false;
    for (std::size_t i = 0; i < local.size(); ++i) {
      if (local[i] == '.') {
        if (local[i + 1] == '.') return false;
      } else if (!is_atext(local[i])) {
        return false;
      }
    }
  }
  if (domain.front() == '[') {
    if (domain.back() != ']') return false;
    std::string_view lit = domain.substr(1, domain.size() - 2);
    if (lit.starts_with("IPv6:")) return is_ipv6(lit.substr(5));
    return is_ipv4(lit);
  }
  return is_hostname(domain);
}

bool is_uuid(std::string_view s) noexcept {
  if (s.size() != 36) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-' : !is_hex(s[i])) return false;
  }
  return true;
}

bool is_ipv4(std::string_view s) noexcept {
  int parts = 0;
  std::size_t i = 0;
  while (true) {
    std::size_t start = i;
    int v = 0;
    while (i < s.size() && is_digit(s[i]) && i - start < 3) v = v * 10 + (s[i++] - '0');
    std::size_t len = i - start;
    if (len == 0 || v > 255 || (len > 1 && s[start] == '0')) return false;
    ++parts;
    if (i == s.size()) break;
    if (s[i] != '.' || parts == 4) return false;
    ++i;
  }
  return parts == 4;
}

bool is_ipv6(std::string_view s) noexcept {
  int groups = 0;
  bool compressed = false;
  std::size_t i = 0;
  if (s.starts_with("::")) {
    compressed = true;
    i = 2;
    if (s.size() == 2) return true;
  } else if (s.starts_with(":")) {
    return false;
  }
  while (i < s.size()) {
    std::size_t start = i;
    while (i < s.size() && is_hex(s[i]) && i - start < 5) ++i;
    std::size_t len = i - start;
    if (i < s.size() && s[i] == '.') {
      // An embedded IPv4 address ends the text and counts as two groups.
      if (!is_ipv4(s.substr(start))) return false;
      groups += 2;
      i = s.size();
      break;
    }
    if (len == 0 || len > 4) return false;
    ++groups;
    if (i == s.size()) break;
    if (s[i] != ':') return false;
    ++i;
    if (i < s.size() && s[i] == ':') {
      if (compressed) return false;
      compressed = true;
      ++i;
      if (i == s.size()) break;
    } else if (i == s.size()) {
      return false;  // a single trailing colon
    }
  }
  return compressed ? groups <= 7 : groups == 8;
}

bool is_hostname(std::string_view s) noexcept {
  if (s.empty() || s.size() > 253) return false;
  std::size_t start = 0;
  while (true) {
    std::size_t dot = s.find('.', start);
    std::string_view label = s.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') return false;
    for (char c : label)
      if (!is_alpha(c) && !is_digit(c) && c != '-') return false;
    // RFC 5891: "--" in positions 3-4 is reserved for A-labels ("xn--").
    if (label.size() >= 4 && label[2] == '-' && label[3] == '-') {
      char a = label[0] | 0x20, b = label[1] | 0x20;
      if (a != 'x' || b != 'n') return false;
    }
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return true;
}

// RFC 3986 URI (absolute, with scheme): scheme ":" hier-part ["?" query] ["#" fragment].
bool is_uri(std::string_view s) noexcept {
  std::size_t colon = s.find(':');
  if (colon == std::string_view::npos || colon == 0 || !is_alpha(s[0])) return false;
  for (std::size_t i = 1; i < colon; ++i)
    if (!is_alpha(s[i]) && !is_digit(s[i]) && s[i] != '+' && s[i] != '-' && s[i] != '.') return false;
  std::string_view rest = s.substr(colon + 1);
  std::string_view fragment, query;
  if (std::size_t h = rest.find('#'); h != std::string_view::npos) {
    fragment = rest.substr(h + 1);
    rest = rest.substr(0, h);
  }
  if (std::size_t q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  auto qf = [](char c) { return is_pchar(c) || c == '/' || c == '?'; };
  if (!uri_chars(fragment, qf) || !uri_chars(query, qf)) return false;
  std::string_view path = rest;
  if (rest.starts_with("//")) {
    std::string_view auth = rest.substr(2);
    std::size_t slash = auth.find('/');
    path = slash == std::string_view::npos ? std::string_view{} : auth.substr(slash);
    if (!uri_authority(auth.substr(0, slash))) return false;
  }
  return uri_chars(path, [](char c) { return is_pchar(c) || c == '/'; });
}

bool check_format(format_kind f, std::string_view s) noexcept {
  switch (f) {
    case format_kind::none: return true;
    case format_kind::date_time: return is_date_time(s);
    case format_kind::date: return is_date(s);
    case format_kind::time: return is_time(s);
    case format_kind::email: return is_email(s);
    case format_kind::uuid: return is_uuid(s);
    case format_kind::ipv4: return is_ipv4(s);
    case format_kind::ipv6: return is_ipv6(s);
    case format_kind::hostname: return is_hostname(s);
    case format_kind::uri: return is_uri(s);
  }
  return false;
}

std::string_view format_name(format_kind f) noexcept {
  switch (f) {
    case format_kind::none: return "";
    case format_kind::date_time: return "date-time";
    case format_kind::date: return "date";
    case format_kind::time: return "time";
    case format_kind::email: return "email";
    case format_kind::uuid: return "uuid";
    case format_kind::ipv4: return "ipv4";
    case format_kind::ipv6: return "ipv6";
    case format_kind::hostname: return "hostname";
    case format_kind::uri: return "uri";
  }
  return "";
}

}  // namespace sluice::schema::detail
