// Internal: the compiled form of a schema — a flat array of nodes whose keyword checks are
// precomputed fields (no keyword lookups at validation time). Built once by compile(), then
// immutable and shared read-only by any number of threads (RE2 matching is thread-safe).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <re2/re2.h>

#include "schema/schema.hpp"
#include "schema/value_hash.hpp"

namespace sluice::schema::detail {

// JSON kinds as bits so `type: ["string","null"]` is one mask test.
enum type_bit : std::uint8_t {
  t_null = 1,
  t_boolean = 2,
  t_integer = 4,  // an integral number; t_number below admits every number
  t_number = 8,
  t_string = 16,
  t_array = 32,
  t_object = 64,
};
inline constexpr std::uint8_t t_any = 127;

enum class format_kind : std::uint8_t { none, date_time, date, time, email, uuid, ipv4, ipv6, hostname, uri };

namespace key_detail {
inline std::uint64_t load8(const char* p) noexcept {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline std::uint64_t load4(const char* p) noexcept {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline std::uint64_t mix(std::uint64_t a, std::uint64_t b) noexcept {
  const unsigned __int128 r = static_cast<unsigned __int128>(a) * b;
  return static_cast<std::uint64_t>(r) ^ static_cast<std::uint64_t>(r >> 64);
}
}  // namespace key_detail

// The hash used for member-name lookups, computed once per key and shared by all evaluations.
// Every byte counts (8 at a time, the tail by overlapping loads), so keys that differ anywhere
// differ in the hash; short keys, the common case, take a few multiplies and no loop.
inline std::uint64_t key_hash(std::string_view k) noexcept {
  using namespace key_detail;
  const char* p = k.data();
  std::size_t n = k.size();
  std::uint64_t h = 0x9e3779b97f4a7c15ULL ^ (n * 0xa0761d6478bd642fULL);
  if (n > 16) {
    for (; n > 16; p += 16, n -= 16)
      h = mix(load8(p) ^ 0xe7037ed1a0b428dbULL, load8(p + 8) ^ h);
    p = k.data() + k.size() - 16;  // the last 16 bytes (overlapping what came before)
    n = 16;
  }
  std::uint64_t a = 0, b = 0;
  if (n >= 8) {
    a = load8(p);
    b = load8(p + n - 8);
  } else if (n >= 4) {
    a = load4(p);
    b = load4(p + n - 4);
  } else if (n > 0) {
    a = (static_cast<std::uint64_t>(static_cast<unsigned char>(p[0])) << 16) |
        (static_cast<std::uint64_t>(static_cast<unsigned char>(p[n >> 1])) << 8) |
        static_cast<unsigned char>(p[n - 1]);
  }
  return mix(a ^ 0x8ebc6af09c88c6e3ULL, b ^ h) ^ h;
}

// Byte equality of two keys of the same length, inlined for the short names schemas use.
inline bool same_key(const char* a, const char* b, std::size_t n) noexcept {
  using namespace key_detail;
  if (n >= 8) {
    for (std::size_t i = 0; i + 8 <= n; i += 8)
      if (load8(a + i) != load8(b + i)) return false;
    return load8(a + n - 8) == load8(b + n - 8);
  }
  if (n >= 4) return load4(a) == load4(b) && load4(a + n - 4) == load4(b + n - 4);
  if (n == 0) return true;
  // 1-3 bytes: first, middle and last cover them all, compared at once (no loop to mispredict).
  auto tri = [n](const char* p) {
    return static_cast<std::uint32_t>(static_cast<unsigned char>(p[0])) |
           static_cast<std::uint32_t>(static_cast<unsigned char>(p[n >> 1])) << 8 |
           static_cast<std::uint32_t>(static_cast<unsigned char>(p[n - 1])) << 16;
  };
  return tri(a) == tri(b);
}

inline constexpr std::uint32_t no_node = std::numeric_limits<std::uint32_t>::max();
inline constexpr std::uint32_t unbounded = std::numeric_limits<std::uint32_t>::max();

// A substring of program::text. Paths and names share one pool so a compiled schema is a handful
// of allocations (a cache that churns schemas then fragments the heap far less).
struct text_ref {
  std::uint32_t off = 0;
  std::uint32_t len = 0;
};

// A [begin, begin+size) range in one of the program's side arrays.
struct span32 {
  std::uint32_t begin = 0;
  std::uint32_t size = 0;
};

// One entry of a node's sorted key table: a property name the node cares about, either because
// `properties` names it (prop != no_node) or because `required`/`dependentRequired` do
// (tracked != no_node, the bit index in the per-object "seen" bitset).
struct key_entry {
  text_ref name;
  std::uint64_t hash = 0;  // key_hash(name)
  std::uint32_t prop = no_node;
  std::uint32_t tracked = no_node;
  std::uint32_t next = no_node;  // the next `properties` name in schema order (index in the node's keys)
};

// One slot of a node's key table: 0 = empty, else the top 32 bits of the key's hash (compared
// before the key entry is touched) and 1 + its index in the node's keys.
struct key_slot {
  std::uint32_t hash_hi = 0;
  std::uint32_t entry = 0;
};

inline std::uint32_t key_slot_of(std::uint64_t hash, std::uint64_t mult, std::uint8_t shift) noexcept {
  return static_cast<std::uint32_t>((hash * mult) >> shift);
}

// An unanchored search, as JSON Schema's `pattern` means: RE2::PartialMatch without the layers
// that parse capture arguments (none are wanted here).
inline bool pattern_matches(const re2::RE2& re, std::string_view s) {
  return re.Match(re2::StringPiece(s.data(), s.size()), 0, s.size(), re2::RE2::UNANCHORED, nullptr, 0);
}

struct pattern_entry {
  std::uint32_t regex;  // index into program::regexes
  std::uint32_t node;
};

// dependentRequired: if tracked name `trigger` is present, every tracked index in `needs` must be.
struct dependency {
  std::uint32_t trigger;
  span32 needs;  // into program::indices
};

// Bit flags summarising which keyword groups a node has, so the evaluator skips whole groups.
enum node_flag : std::uint32_t {
  f_false = 1u << 0,         // the `false` schema
  f_numeric = 1u << 1,       // any of minimum/maximum/exclusive*/multipleOf
  f_string = 1u << 2,        // minLength/maxLength/pattern/format
  f_array = 1u << 3,         // any array keyword
  f_object = 1u << 4,        // any object keyword
  f_enum = 1u << 5,          // enum or const
  f_inplace = 1u << 6,       // allOf/anyOf/oneOf/not/if/$ref
  f_needs_content = 1u << 7, // pattern or format: the string must be buffered
  f_unique = 1u << 8,
  f_integer_only = 1u << 9,  // type admits integers but not other numbers
  f_max_length = 1u << 10,
  f_dependencies = 1u << 11, // draft 7: dependentRequired spelled `dependencies` (schema paths, messages)
};

struct node {
  std::uint32_t flags = 0;
  std::uint8_t types = t_any;
  std::uint8_t any_types = t_any;  // an anyOf of type-only branches, folded into a mask (compile.cpp)
  format_kind format = format_kind::none;

  // numbers
  bool has_minimum = false, has_maximum = false, has_xminimum = false, has_xmaximum = false;
  bool has_multiple_of = false;
  double minimum = 0, maximum = 0, xminimum = 0, xmaximum = 0, multiple_of = 0;

  // strings (lengths in Unicode code points)
  std::uint32_t min_length = 0, max_length = unbounded;
  std::uint32_t pattern = no_node;  // index into program::regexes

  // arrays
  std::uint32_t min_items = 0, max_items = unbounded;
  span32 prefix_items;  // into program::indices
  std::uint32_t items = no_node;
  std::uint32_t contains = no_node;
  std::uint32_t min_contains = 1, max_contains = unbounded;

  // objects
  span32 keys;              // into program::keys, sorted by name
  span32 key_slots;         // open-addressing table over `keys` (power-of-two size), into
                            // program::slots; see key_slot
  std::uint64_t key_mult = 1;     // slot of a key: (key_hash * key_mult) >> key_shift, then linear probing
  std::uint8_t key_shift = 63;
  bool key_perfect = false;       // every key sits at its first slot: one probe decides
  // The first `properties` name in schema order (index in keys). Structured outputs emit members
  // in that order, so the evaluator tries the predicted name before hashing (key_entry::next).
  std::uint32_t first_key = no_node;
  span32 pattern_props;     // into program::patterns
  std::uint32_t additional = no_node;
  std::uint32_t property_names = no_node;
  std::uint32_t min_properties = 0, max_properties = unbounded;
  span32 tracked_names;     // tracked index -> name, into program::names
  span32 required;          // tracked indices, into program::indices
  // `required` as a mask of the first word of the "seen" bitset, so that an object with every
  // required name decides in one test; required_fits is false when an index lies beyond that word.
  std::uint64_t required_mask = 0;
  bool required_fits = true;
  span32 dependencies;      // into program::dependencies

  // in-place applicators (evaluated against the same instance value)
  span32 all_of, any_of, one_of;  // into program::indices
  std::uint32_t not_ = no_node, if_ = no_node, then_ = no_node, else_ = no_node, ref = no_node;

  // enum/const, compared by structural hash (see value_hash.hpp)
  bool has_enum = false;
  span32 enum_values;  // into program::hashes, sorted (may be empty: nothing is allowed)
  bool has_const = false;
  value_hash const_hash{};

  text_ref path;  // JSON pointer of this schema inside the compiled document
};

struct program {
  std::vector<node> nodes;  // nodes[0] is the root
  std::vector<std::uint32_t> indices;
  std::vector<key_entry> keys;
  std::vector<key_slot> slots;
  std::vector<pattern_entry> patterns;
  std::vector<dependency> dependencies;
  std::vector<value_hash> hashes;
  std::vector<std::unique_ptr<re2::RE2>> regexes;
  std::vector<text_ref> names;
  std::string text;  // pool for every text_ref
  std::size_t estimated_bytes = 0;
  bool check_only = false;  // compiled with compile_purpose::check_only (schema.hpp)
  schema::dialect dialect = schema::dialect::draft2020_12;  // chosen by the root $schema

  std::string_view str(text_ref r) const noexcept { return {text.data() + r.off, r.len}; }
  text_ref add_text(std::string_view s) {
    text_ref r{static_cast<std::uint32_t>(text.size()), static_cast<std::uint32_t>(s.size())};
    text.append(s);
    return r;
  }
};

}  // namespace sluice::schema::detail
