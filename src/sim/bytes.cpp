#include "sim/bytes.hpp"

#include <algorithm>

namespace sluice::sim {

std::uint64_t fnv1a_of(std::string_view bytes) noexcept {
  fnv1a_hasher h;
  h.feed(bytes);
  return h.value;
}

std::uint64_t mix64(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

void byte_pattern::fill(std::uint64_t offset, char* out, std::size_t size) const noexcept {
  // Word k of the sequence is mix64(seed + k): byte i is byte (i % 8) of word i / 8, so a piece
  // that starts inside a word takes that word's remaining bytes first.
  std::size_t done = 0;
  while (done < size) {
    const std::uint64_t at = offset + done;
    const std::uint64_t word = mix64(seed_ ^ (at / 8) * 0xd1b54a32d192ed03ull);
    const std::size_t from = static_cast<std::size_t>(at % 8);
    const std::size_t n = std::min<std::size_t>(8 - from, size - done);
    for (std::size_t i = 0; i < n; ++i) out[done + i] = static_cast<char>((word >> (8 * (from + i))) & 0xff);
    done += n;
  }
}

std::string base64_encode(std::string_view bytes) {
  static constexpr char alphabet64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const std::size_t n = std::min<std::size_t>(3, bytes.size() - i);
    std::uint32_t chunk = 0;
    for (std::size_t k = 0; k < 3; ++k)
      chunk = (chunk << 8) | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0u);
    for (std::size_t k = 0; k < 4; ++k) out += k <= n ? alphabet64[(chunk >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

std::string hex_digits(std::uint64_t v, std::size_t digits) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out(digits, '0');
  for (std::size_t i = 0; i < digits && i < 16; ++i) out[digits - 1 - i] = hex[(v >> (4 * i)) & 0xf];
  return out;
}

}  // namespace sluice::sim
