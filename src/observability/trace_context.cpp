#include "observability/trace_context.hpp"

#include <algorithm>
#include <random>

namespace sluice::obs {
namespace {

constexpr char hex_digits[] = "0123456789abcdef";

template <std::size_t N>
void write_hex_to(const std::array<std::uint8_t, N>& b, char* out) noexcept {
  for (std::size_t i = 0; i < N; ++i) {
    out[2 * i] = hex_digits[b[i] >> 4];
    out[2 * i + 1] = hex_digits[b[i] & 0xF];
  }
}

template <std::size_t N>
std::string to_hex(const std::array<std::uint8_t, N>& b) {
  std::string out(N * 2, '0');
  write_hex_to(b, out.data());
  return out;
}

int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // uppercase is not allowed by the spec
}

template <std::size_t N>
bool from_hex(std::string_view text, std::array<std::uint8_t, N>& out) noexcept {
  if (text.size() != N * 2) return false;
  for (std::size_t i = 0; i < N; ++i) {
    const int hi = hex_value(text[2 * i]), lo = hex_value(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<std::uint8_t>(hi << 4 | lo);
  }
  return true;
}

template <std::size_t N>
bool all_zero(const std::array<std::uint8_t, N>& b) noexcept {
  return std::all_of(b.begin(), b.end(), [](std::uint8_t x) { return x == 0; });
}

std::mt19937_64& id_rng() {
  thread_local std::mt19937_64 rng = [] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd(), rd(), rd(), rd(), rd()};
    return std::mt19937_64(seq);
  }();
  return rng;
}

template <std::size_t N>
void fill_random(std::array<std::uint8_t, N>& b) noexcept {
  auto& rng = id_rng();
  do {
    for (std::size_t i = 0; i < N; i += 8) {
      std::uint64_t v = rng();
      for (std::size_t j = 0; j < 8 && i + j < N; ++j) b[i + j] = static_cast<std::uint8_t>(v >> (8 * j));
    }
  } while (all_zero(b));
}

}  // namespace

bool trace_id::valid() const noexcept { return !all_zero(bytes); }
bool span_id::valid() const noexcept { return !all_zero(bytes); }
std::string trace_id::hex() const { return to_hex(bytes); }
void trace_id::write_hex(char* out) const noexcept { write_hex_to(bytes, out); }
void span_id::write_hex(char* out) const noexcept { write_hex_to(bytes, out); }
std::string span_id::hex() const { return to_hex(bytes); }

std::optional<trace_parent> parse_traceparent(std::string_view h) noexcept {
  // version "-" trace-id "-" parent-id "-" flags: 2 + 1 + 32 + 1 + 16 + 1 + 2 = 55 characters.
  constexpr std::size_t length = 55;
  if (h.size() < length || h[2] != '-' || h[35] != '-' || h[52] != '-') return std::nullopt;
  std::array<std::uint8_t, 1> version{}, flags{};
  if (!from_hex(h.substr(0, 2), version) || version[0] == 0xff) return std::nullopt;
  // Version 00 is exactly 55 characters; a later version may add fields after a '-'.
  if (version[0] == 0 ? h.size() != length : (h.size() > length && h[length] != '-')) return std::nullopt;
  trace_parent p;
  if (!from_hex(h.substr(3, 32), p.trace.bytes) || !from_hex(h.substr(36, 16), p.parent.bytes) ||
      !from_hex(h.substr(53, 2), flags))
    return std::nullopt;
  if (!p.trace.valid() || !p.parent.valid()) return std::nullopt;
  p.sampled = (flags[0] & 0x01) != 0;
  return p;
}

std::string format_traceparent(const trace_id& trace, const span_id& span, bool sampled) {
  std::string out;
  out.reserve(55);
  out += "00-";
  out += trace.hex();
  out += '-';
  out += span.hex();
  out += sampled ? "-01" : "-00";
  return out;
}

bool acceptable_tracestate(std::string_view h) noexcept {
  if (h.empty() || h.size() > 512) return false;
  std::size_t members = 1;
  bool has_eq = false;
  for (char c : h) {
    if (c < 0x20 || c > 0x7e) return false;
    if (c == '=') has_eq = true;
    if (c == ',') {
      if (!has_eq || ++members > 32) return false;
      has_eq = false;
    }
  }
  return has_eq;
}

trace_id new_trace_id() noexcept {
  trace_id t;
  fill_random(t.bytes);
  return t;
}

span_id new_span_id() noexcept {
  span_id s;
  fill_random(s.bytes);
  return s;
}

bool sampled_by_ratio(const trace_id& trace, double ratio) noexcept {
  if (!(ratio > 0)) return false;
  if (ratio >= 1) return true;
  std::uint64_t v = 0;
  for (std::size_t i = 8; i < 16; ++i) v = v << 8 | trace.bytes[i];
  return static_cast<double>(v) < ratio * 18446744073709551616.0;
}

}  // namespace sluice::obs
