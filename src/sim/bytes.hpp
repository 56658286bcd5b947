// Byte helpers of the simulator's upload and download routes: an incremental FNV-1a digest, a
// 64-bit mixer, a deterministic byte pattern readable at any offset, base64 and hex. Pure; values
// are plain and owned by their caller.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sluice::sim {

// 64-bit FNV-1a, fed in pieces: the digest of a body does not depend on how it arrived.
struct fnv1a_hasher {
  static constexpr std::uint64_t offset_basis = 1469598103934665603ull;
  std::uint64_t value = offset_basis;
  std::uint64_t size = 0;  // bytes fed

  void feed(std::string_view bytes) noexcept {
    for (unsigned char ch : bytes) value = (value ^ ch) * 1099511628211ull;
    size += bytes.size();
  }
};

// FNV-1a of one string.
std::uint64_t fnv1a_of(std::string_view bytes) noexcept;

// SplitMix64's finaliser: spreads every input bit over the output (ids, seeds, colours).
std::uint64_t mix64(std::uint64_t x) noexcept;

// An endless deterministic byte sequence, a pure function of (seed, offset): any piece can be
// produced on its own, so a body streamed in pieces never has to exist whole.
class byte_pattern {
 public:
  explicit byte_pattern(std::uint64_t seed) noexcept : seed_(seed) {}
  // Writes the bytes at [offset, offset + size) of the sequence to out.
  void fill(std::uint64_t offset, char* out, std::size_t size) const noexcept;

 private:
  std::uint64_t seed_;
};

// Standard base64 with padding.
std::string base64_encode(std::string_view bytes);

// v as `digits` lowercase hex digits (the low ones when digits < 16).
std::string hex_digits(std::uint64_t v, std::size_t digits);

}  // namespace sluice::sim
