#include "observability/log_format.hpp"

#include <fmt/format.h>

#include <cmath>
#include <ctime>
#include <iterator>

namespace sluice::obs::detail {
namespace {

std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const auto cont = [&](std::size_t k) { return i + k < s.size() && (b(k) & 0xC0) == 0x80; };
  const unsigned char c = b(0);
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0;  // overlong
    if (c == 0xED && b(1) > 0x9F) return 0;  // UTF-16 surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && b(1) < 0x90) return 0;  // overlong
    if (c == 0xF4 && b(1) > 0x8F) return 0;  // past U+10FFFF
    return 4;
  }
  return 0;
}

// logfmt: bare when the value is plain printable text, quoted (JSON rules) otherwise.
void append_text_value(std::string& out, std::string_view s) {
  bool bare = !s.empty();
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c == 0x7F || c >= 0x80 || c == '"' || c == '=' || c == '\\') {
      bare = false;
      break;
    }
  }
  if (bare)
    out.append(s);
  else
    append_json_quoted(out, s);
}

// Keys are caller-chosen identifiers, but one with a space would still break text lines.
void append_text_key(std::string& out, std::string_view k) {
  for (const char c : k) {
    const bool plain =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
    out += plain ? c : '_';
  }
}

void append_timestamp(std::string& out, std::chrono::system_clock::time_point t) {
  using namespace std::chrono;
  const auto ms = duration_cast<milliseconds>(t.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  auto milli = static_cast<int>(ms % 1000);
  if (milli < 0) {  // before 1970: keep the fraction positive
    milli += 1000;
    --secs;
  }
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  fmt::format_to(std::back_inserter(out), "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, milli);
}

bool reserved_key(std::string_view k) {
  return k == "ts" || k == "level" || k == "msg";
}

void append_value(std::string& out, bool json, const log_field::value_type& v) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string_view>) {
          if (json)
            append_json_quoted(out, x);
          else
            append_text_value(out, x);
        } else if constexpr (std::is_same_v<T, bool>) {
          out += x ? "true" : "false";
        } else if constexpr (std::is_same_v<T, double>) {
          // JSON has no NaN or infinity.
          if (std::isfinite(x))
            fmt::format_to(std::back_inserter(out), "{}", x);
          else
            out += "null";
        } else {
          fmt::format_to(std::back_inserter(out), "{}", x);
        }
      },
      v);
}


// An ASCII byte that needs escaping, as JSON writes it.
void append_ascii_escaped(std::string& out, unsigned char c) {
  switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    default: fmt::format_to(std::back_inserter(out), "\\u{:04x}", c);  // other control characters, DEL
  }
}

// Printable ASCII other than the quote and the backslash: written as it is.
bool plain_byte(unsigned char c) noexcept { return c >= 0x20 && c < 0x7F && c != '"' && c != '\\'; }

}  // namespace

// A JSON string literal. Control characters are escaped (no value can break the one-line-per-record
// rule) and invalid UTF-8 becomes U+FFFD (a request id is raw header bytes; JSON must be UTF-8).
// Runs of plain bytes, nearly every string, are appended whole.
void append_json_quoted(std::string& out, std::string_view s) {
  out += '"';
  for (std::size_t i = 0; i < s.size();) {
    std::size_t plain = i;
    while (plain < s.size() && plain_byte(static_cast<unsigned char>(s[plain]))) ++plain;
    out.append(s.data() + i, plain - i);
    if ((i = plain) == s.size()) break;
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      append_ascii_escaped(out, c);
      ++i;
    } else if (const std::size_t n = utf8_length(s, i); n != 0) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out += "\\ufffd";
      ++i;
    }
  }
  out += '"';
}

std::string render(bool json, std::chrono::system_clock::time_point t, std::string_view level, std::string_view msg,
                   std::span<const log_field> fields) {
  std::string out;
  out.reserve(128 + msg.size() + fields.size() * 24);
  if (json) {
    out += "{\"ts\":\"";
    append_timestamp(out, t);
    out += "\",\"level\":\"";
    out += level;
    out += "\",\"msg\":";
    append_json_quoted(out, msg);
    for (const auto& f : fields) {
      out += ',';
      // A field named like a built-in key would make a duplicate JSON member; prefix it instead.
      if (reserved_key(f.key))
        append_json_quoted(out, "_" + std::string(f.key));
      else
        append_json_quoted(out, f.key);
      out += ':';
      append_value(out, true, f.value);
    }
    out += '}';
  } else {
    out += "ts=";
    append_timestamp(out, t);
    out += " level=";
    out += level;
    out += " msg=";
    append_text_value(out, msg);
    for (const auto& f : fields) {
      out += ' ';
      if (reserved_key(f.key)) out += '_';
      append_text_key(out, f.key);
      out += '=';
      append_value(out, false, f.value);
    }
  }
  return out;
}

}  // namespace sluice::obs::detail
