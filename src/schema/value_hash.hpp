// Internal: a 128-bit structural hash of JSON values under JSON Schema equality (1 == 1.0 == 1e0,
// object member order ignored), computable incrementally from parser events. enum/const and
// uniqueItems compare hashes, so a streamed value never needs to be buffered. Pure functions.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <string_view>

namespace sluice::schema::detail {

struct value_hash {
  std::uint64_t a = 0, b = 0;
  friend bool operator==(const value_hash&, const value_hash&) = default;
  friend auto operator<=>(const value_hash&, const value_hash&) = default;
};

// Two lanes with unrelated constants: a collision needs both 64-bit lanes to collide at once.
inline constexpr std::uint64_t fmix64(std::uint64_t k) noexcept {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 33;
  return k;
}
inline constexpr value_hash mix(value_hash h, std::uint64_t x) noexcept {
  return {fmix64(h.a ^ (x + 0x9e3779b97f4a7c15ULL)), fmix64(h.b + std::rotl(x, 29) + 0x6a09e667f3bcc909ULL)};
}

enum class hash_tag : std::uint64_t { null = 1, boolean, integer, big_unsigned, real, string, array, object };

inline value_hash hash_scalar(hash_tag t, std::uint64_t payload) noexcept {
  return mix(mix(value_hash{static_cast<std::uint64_t>(t), ~static_cast<std::uint64_t>(t)}, payload), payload);
}
inline value_hash hash_null() noexcept { return hash_scalar(hash_tag::null, 0); }
inline value_hash hash_bool(bool v) noexcept { return hash_scalar(hash_tag::boolean, v ? 1 : 0); }
inline value_hash hash_int64(std::int64_t v) noexcept {
  return hash_scalar(hash_tag::integer, static_cast<std::uint64_t>(v));
}
inline value_hash hash_uint64(std::uint64_t v) noexcept {
  if (v <= static_cast<std::uint64_t>(INT64_MAX)) return hash_int64(static_cast<std::int64_t>(v));
  return hash_scalar(hash_tag::big_unsigned, v);
}
// Integral doubles hash like the integer they spell (so 1.0 equals 1); -0.0 equals 0.
inline value_hash hash_double(double d) noexcept {
  if (std::isfinite(d) && std::trunc(d) == d) {
    if (d >= -9223372036854775808.0 && d < 9223372036854775808.0) return hash_int64(static_cast<std::int64_t>(d));
    if (d >= 0 && d < 18446744073709551616.0) return hash_uint64(static_cast<std::uint64_t>(d));
  }
  return hash_scalar(hash_tag::real, std::bit_cast<std::uint64_t>(d));
}

// Strings arrive in pieces; FNV-style lanes are naturally incremental byte by byte.
class string_hasher {
 public:
  void update(std::string_view s) noexcept {
    for (unsigned char c : s) {
      a_ = (a_ ^ c) * 0x100000001b3ULL;
      b_ = (b_ ^ c) * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL;
    }
    n_ += s.size();
  }
  value_hash finish() const noexcept {
    return mix(mix(value_hash{a_, b_}, n_), static_cast<std::uint64_t>(hash_tag::string));
  }

 private:
  std::uint64_t a_ = 0xcbf29ce484222325ULL, b_ = 0x84222325cbf29ce4ULL, n_ = 0;
};
inline value_hash hash_string(std::string_view s) noexcept {
  string_hasher h;
  h.update(s);
  return h.finish();
}

// Arrays: order matters, so fold items in sequence.
class array_hasher {
 public:
  void add(value_hash item) noexcept {
    h_ = mix(mix(h_, item.a), item.b);
    ++n_;
  }
  value_hash finish() const noexcept { return mix(mix(h_, n_), static_cast<std::uint64_t>(hash_tag::array)); }

 private:
  value_hash h_{0x243f6a8885a308d3ULL, 0x13198a2e03707344ULL};
  std::uint64_t n_ = 0;
};

// Objects: member order is irrelevant, so member hashes are summed (commutative).
class object_hasher {
 public:
  void add(value_hash key, value_hash value) noexcept {
    value_hash m = mix(mix(key, value.a), value.b);
    a_ += m.a;
    b_ += m.b;
    ++n_;
  }
  value_hash finish() const noexcept {
    return mix(mix(value_hash{a_, b_}, n_), static_cast<std::uint64_t>(hash_tag::object));
  }

 private:
  std::uint64_t a_ = 0, b_ = 0, n_ = 0;
};

}  // namespace sluice::schema::detail
