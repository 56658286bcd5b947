// Internal: the compiled form of a schema — a flat array of nodes whose keyword checks are
// precomputed fields (no keyword lookups at validation time). Built once by compile(), then
// immutable and shared read-only by any number of threads (RE2 matching is thread-safe).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <re2/re2.h>

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

// The hash used for member-name lookups, computed once per key and shared by all evaluations.
inline std::uint64_t key_hash(std::string_view k) noexcept { return std::hash<std::string_view>{}(k); }

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
};

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
};

struct node {
  std::uint32_t flags = 0;
  std::uint8_t types = t_any;
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
  span32 key_slots;         // open-addressing table over `keys` (power-of-two size; 0 = empty,
                            // else 1 + index into keys), into program::slots
  span32 pattern_props;     // into program::patterns
  std::uint32_t additional = no_node;
  std::uint32_t property_names = no_node;
  std::uint32_t min_properties = 0, max_properties = unbounded;
  span32 tracked_names;     // tracked index -> name, into program::names
  span32 required;          // tracked indices, into program::indices
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
  std::vector<std::uint32_t> slots;
  std::vector<pattern_entry> patterns;
  std::vector<dependency> dependencies;
  std::vector<value_hash> hashes;
  std::vector<std::unique_ptr<re2::RE2>> regexes;
  std::vector<text_ref> names;
  std::string text;  // pool for every text_ref
  std::size_t estimated_bytes = 0;

  std::string_view str(text_ref r) const noexcept { return {text.data() + r.off, r.len}; }
  text_ref add_text(std::string_view s) {
    text_ref r{static_cast<std::uint32_t>(text.size()), static_cast<std::uint32_t>(s.size())};
    text.append(s);
    return r;
  }
};

}  // namespace sluice::schema::detail
