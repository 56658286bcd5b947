// event_scan's fast reader (ADR 0032): a recursive descent over the event's bytes that checks the
// JSON grammar as it goes and reads only the facts, stepping over strings sixteen bytes at a time.
// It says `object` only for a payload it has read to the end and found well formed; for anything
// else (malformed input, a name or value of interest written with escapes, a \u escape of a
// surrogate, an integer of interest too long to be exact, deep nesting) it says `unsure`, and the
// SAX scan, whose verdicts and facts it must match (tests and fuzz_event_scan hold it to that),
// reads the event instead.
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "proxy/relay/event_names.hpp"
#include "proxy/relay/event_scan.hpp"

namespace sluice::proxy::detail {

namespace {

using namespace event_names;

// boost::json refuses more than 32 nested containers; below this the skim is sure it agrees.
constexpr int max_depth = 30;
// Numbers with more digits before the point than this (an integer of 19 may not fit an int64), or
// more after it or in the exponent than these, are left to the SAX scan.
constexpr int max_exact_digits = 18;
constexpr int max_fraction_digits = 64;
constexpr int max_exponent_digits = 4;

// How many bytes from `p` on (at most `n`) are plain string content: not '"', '\\', a control
// character or a byte of a multi-byte UTF-8 sequence. Sixteen bytes a step with SSE2 (a signed
// comparison with ' ' flags both the control characters and the bytes from 0x80 up; x86-64 always
// has it), the rest one at a time.
[[gnu::always_inline]] inline std::size_t plain_run(const char* p, std::size_t n) noexcept {
  std::size_t i = 0;
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(' ');
  for (; n - i >= 16; i += 16) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    const __m128i special =
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, backslash)), _mm_cmplt_epi8(x, space));
    if (const int mask = _mm_movemask_epi8(special); mask != 0) return i + static_cast<std::size_t>(__builtin_ctz(mask));
  }
#endif
  for (; i < n; ++i) {
    const auto c = static_cast<unsigned char>(p[i]);
    if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) return i;
  }
  return n;
}

bool is_ws(char c) noexcept { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }
int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A string's content as it stands in the payload, and whether it has escapes.
struct raw_string {
  std::string_view text;
  bool escaped = false;
};

class skimmer {
 public:
  skimmer(std::string_view payload, event_facts& f) noexcept
      : begin_(payload.data()), p_(payload.data()), end_(payload.data() + payload.size()), f_(f) {}

  skim_verdict run() noexcept {
    skip_ws();
    if (p_ == end_ || *p_ != '{' || !top_object()) return skim_verdict::unsure;
    skip_ws();
    if (p_ != end_) return skim_verdict::unsure;
    finish();
    return skim_verdict::object;
  }

 private:
  void skip_ws() noexcept {  // (compact JSON, the common case, costs one comparison)
    while (p_ != end_ && static_cast<unsigned char>(*p_) <= ' ' && is_ws(*p_)) ++p_;
  }
  // The next byte that is not white space, stepped over ('\0' at the end, where the caller then
  // finds no byte it expects).
  char next() noexcept {
    while (p_ != end_) {
      const char c = *p_++;
      if (static_cast<unsigned char>(c) > ' ' || !is_ws(c)) return c;
    }
    return '\0';
  }

  // Members of an object, p_ just past its '{': `member(name)` reads each value (p_ at its first
  // byte) and returns false to give up. Names with escapes give up when `names_matter`.
  template <class Member>
  bool members(bool names_matter, Member&& member) noexcept {
    char c = next();
    if (c == '}') return true;
    for (;;) {
      raw_string name;
      if (c != '"' || !string(name) || (names_matter && name.escaped) || next() != ':') return false;
      skip_ws();
      if (p_ == end_ || !member(name.text)) return false;
      c = next();
      if (c == '}') return true;
      if (c != ',') return false;
      c = next();
    }
  }

  bool top_object() noexcept {
    ++p_;
    return members(true, [this](std::string_view name) { return top_member(classify_top(name)); });
  }

  bool top_member(top_key k) noexcept {
    switch (k) {
      case top_key::choices: return *p_ == '[' ? choices() : value(1);
      case top_key::usage:
        if (*p_ != '{') return value(1);
        f_.usage_object = true;
        return usage_object(top_counts_, 2);
      case top_key::error: f_.has_error = true; return value(1);
      case top_key::type: return *p_ == '"' ? type() : value(1);
      case top_key::response: return *p_ == '{' ? response_object() : value(1);
      case top_key::sequence_number: return number_or_value(&f_.sequence_number, 1);
      case top_key::other: return value(1);
    }
    return false;
  }

  bool choices() noexcept {
    f_.choices_array = true;
    return elements(2, [this] { ++f_.choices; });
  }

  // Elements of an array, p_ at its '[' (the `depth`th container), `counted()` after each.
  template <class Counted>
  bool elements(int depth, Counted&& counted) noexcept {
    ++p_;
    skip_ws();
    if (p_ != end_ && *p_ == ']') return ++p_, true;
    for (;;) {
      if (p_ == end_ || !value(depth)) return false;
      counted();
      const char c = next();
      if (c == ']') return true;
      if (c != ',') return false;
      skip_ws();
    }
  }

  bool type() noexcept {
    raw_string s;
    ++p_;
    if (!string(s) || s.escaped) return false;
    if (const auto t = classify_type(s.text); t != event_facts::type_kind::none) f_.type = t;
    return true;
  }

  bool response_object() noexcept {
    response_object_ = true;
    ++p_;
    return members(true, [this](std::string_view name) {
      if (name == "usage" && *p_ == '{') {
        response_usage_object_ = true;
        return usage_object(nested_counts_, 3);
      }
      if (name != "id" || *p_ != '"') return value(2);
      raw_string id;
      ++p_;
      if (!string(id)) return false;
      if (!id.escaped) f_.response_id = {true, static_cast<std::size_t>(id.text.data() - begin_), id.text.size()};
      return true;
    });
  }

  // A usage object's members, p_ at its '{' (the `depth`th container): the counts of interest into
  // `counts`.
  bool usage_object(std::int64_t* counts, int depth) noexcept {
    ++p_;
    return members(true, [this, counts, depth](std::string_view name) {
      return number_or_value(usage_slot(classify_usage(name), counts), depth);
    });
  }

  // A value inside `depth` containers whose integer, if it is one, goes to `*to` (when `to` is set).
  bool number_or_value(std::int64_t* to, int depth) noexcept {
    if (to != nullptr && (*p_ == '-' || is_digit(*p_))) return number(to);
    return value(depth);
  }

  bool value(int depth) noexcept;
  bool literal(std::string_view word) noexcept;
  bool number(std::int64_t* to) noexcept;
  int digits() noexcept;
  [[gnu::always_inline]] bool string(raw_string& out) noexcept;
  [[gnu::noinline]] bool string_rest(const char* start, raw_string& out) noexcept;
  bool escape() noexcept;
  bool multibyte() noexcept;

  void finish() noexcept {
    f_.response_object = response_object_;
    finish_usage(f_, top_counts_, nested_counts_, response_usage_object_);
  }

  const char* const begin_;
  const char* p_;
  const char* const end_;
  event_facts& f_;
  bool response_object_ = false;
  bool response_usage_object_ = false;
  std::int64_t top_counts_[4] = {-1, -1, -1, -1};     // usage: completion, prompt, output, input
  std::int64_t nested_counts_[4] = {-1, -1, -1, -1};  // response.usage: the same
};

// Any value, p_ at its first byte; `depth` counts the containers around it.
bool skimmer::value(int depth) noexcept {
  switch (*p_) {
    case '"': {
      raw_string s;
      ++p_;
      return string(s);
    }
    case '{':
      if (depth >= max_depth) return false;
      ++p_;
      return members(false, [this, depth](std::string_view) { return value(depth + 1); });
    case '[': return depth < max_depth && elements(depth + 1, [] {});
    case 't': return literal("true");
    case 'f': return literal("false");
    case 'n': return literal("null");
    default: return number(nullptr);
  }
}

bool skimmer::literal(std::string_view word) noexcept {
  if (static_cast<std::size_t>(end_ - p_) < word.size() || std::memcmp(p_, word.data(), word.size()) != 0) return false;
  p_ += word.size();
  return true;
}

// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?; an integer's value goes to `*to` when `to` is set.
// Numbers with more digits than the limits are left to the SAX scan (boost::json refuses some: an
// exponent it cannot hold).
bool skimmer::number(std::int64_t* to) noexcept {
  const bool negative = *p_ == '-';
  if (negative) ++p_;
  const char* whole = p_;
  const int count = digits();
  if (count <= 0 || count > max_exact_digits || (*whole == '0' && count > 1)) return false;
  bool integer = true;
  if (p_ != end_ && *p_ == '.') {
    integer = false;
    ++p_;
    if (const int n = digits(); n <= 0 || n > max_fraction_digits) return false;
  }
  if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
    integer = false;
    if (++p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
    if (const int n = digits(); n <= 0 || n > max_exponent_digits) return false;
  }
  if (integer && to != nullptr) {
    std::int64_t v = 0;
    for (const char* d = whole; d != whole + count; ++d) v = v * 10 + (*d - '0');
    *to = negative ? -v : v;
  }
  return true;
}

// Steps over a run of digits; how many.
int skimmer::digits() noexcept {
  const char* start = p_;
  while (p_ != end_ && is_digit(*p_)) ++p_;
  return static_cast<int>(p_ - start);
}

// A string, p_ just past its opening quote; `out` is its content between the quotes. Inlined where
// it is read: most strings of an event are short and plain, and end in the first step.
inline bool skimmer::string(raw_string& out) noexcept {
  const char* start = p_;
  p_ += plain_run(p_, static_cast<std::size_t>(end_ - p_));
  if (p_ != end_ && *p_ == '"') [[likely]] {
    out.text = std::string_view(start, static_cast<std::size_t>(p_ - start));
    ++p_;
    return true;
  }
  return string_rest(start, out);
}

// The rest of a string from its first escape, multi-byte character, control character or the end.
bool skimmer::string_rest(const char* start, raw_string& out) noexcept {
  for (;;) {
    if (p_ == end_) return false;
    const auto c = static_cast<unsigned char>(*p_);
    if (c == '"') {
      out.text = std::string_view(start, static_cast<std::size_t>(p_ - start));
      ++p_;
      return true;
    }
    if (c == '\\') {
      out.escaped = true;
      if (!escape()) return false;
    } else if (c >= 0x80) {
      if (!multibyte()) return false;
    } else {
      return false;  // a control character
    }
    p_ += plain_run(p_, static_cast<std::size_t>(end_ - p_));
  }
}

// An escape, p_ at its backslash. A \u escape of a surrogate is left to the SAX scan, which
// checks the pair.
bool skimmer::escape() noexcept {
  if (end_ - p_ < 2) return false;
  switch (p_[1]) {
    case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't': p_ += 2; return true;
    case 'u': break;
    default: return false;
  }
  if (end_ - p_ < 6) return false;
  int code = 0;
  for (int i = 2; i < 6; ++i) {
    const int h = hex_value(p_[i]);
    if (h < 0) return false;
    code = code * 16 + h;
  }
  if (code >= 0xD800 && code <= 0xDFFF) return false;
  p_ += 6;
  return true;
}

// A multi-byte UTF-8 sequence, p_ at its lead byte: well formed, no overlong form, no surrogate,
// nothing above U+10FFFF.
bool skimmer::multibyte() noexcept {
  const auto lead = static_cast<unsigned char>(*p_);
  int length = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
  if (lead >= 0xC2 && lead <= 0xDF) length = 2;
  else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) lo = 0xA0;
    if (lead == 0xED) hi = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;
  } else {
    return false;
  }
  if (end_ - p_ < length) return false;
  const auto second = static_cast<unsigned char>(p_[1]);
  if (second < lo || second > hi) return false;
  for (int i = 2; i < length; ++i)
    if ((static_cast<unsigned char>(p_[i]) & 0xC0) != 0x80) return false;
  p_ += length;
  return true;
}

}  // namespace

skim_verdict skim_event(std::string_view payload, event_facts& out) noexcept {
  out = event_facts{};
  return skimmer(payload, out).run();
}

}  // namespace sluice::proxy::detail
