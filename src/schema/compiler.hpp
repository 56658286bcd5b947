// Internal to compile(): the compiler that turns a schema document into a detail::program. Every
// loop and recursion in it is bounded by compile_limits, checked before the work it guards, so a
// hostile schema is refused quickly. Its parts: compile.cpp (one node per subschema, keyword
// dispatch, $ref resolution, folding), compile_keywords.cpp (what each keyword sets in a node),
// compile_key_table.cpp (a node's member-name table), compile_depth.cpp (depth through $refs).
// One per compile() call, single-threaded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <boost/json/value.hpp>

#include "core/error.hpp"
#include "schema/program.hpp"
#include "schema/schema.hpp"

namespace sluice::schema::detail {

// A subschema a node does not hold but the depth pass must still follow (check_only: regex-less
// patternProperties, draft 7's schema-valued dependencies).
struct side_child {
  std::uint32_t parent;
  std::uint32_t child;
  bool descends;  // applies to a nested value (a level deeper) rather than in place
};

// Keywords whose subschemas apply to values nested inside the instance: they count towards
// compile_limits::max_depth. In-place applicators (allOf, $ref, ...) and $defs do not.
bool descends(std::string_view k);

class compiler {
 public:
  compiler(const boost::json::value& root, const compile_limits& lim, compile_purpose purpose, program& p)
      : root_(root), lim_(lim), check_only_(purpose == compile_purpose::check_only), p_(p) {}

  result<void> run();

 private:
  // The member names one schema object mentions, gathered while its keywords are read and turned
  // into its key table at the end (build_key_table).
  struct member_names {
    std::vector<std::pair<std::string, std::uint32_t>> properties;  // name, subschema node
    std::vector<std::string> required;
    std::vector<std::pair<std::string, std::vector<std::string>>> dependent;  // dependentRequired
    std::vector<std::uint32_t> unmatched;  // check_only: patternProperties subschemas (no regex, so not in the node)
    std::vector<std::uint32_t> unmatched_in_place;  // check_only: draft 7's schema-valued dependencies
  };

  // What every member of one schema object shares while its keywords are read.
  struct object_scope {
    std::uint32_t idx;   // the object's node
    std::size_t depth;   // its depth (a descending keyword's subschemas are one deeper)
    bool is_root;
    bool has_contains;   // minContains/maxContains count only beside `contains`
    bool tuple_items;    // drafts 7 and 2019-09: `items` is an array (additionalItems applies)
    member_names names;
  };

  struct pending_ref {
    std::uint32_t node;
    std::string ref;
    std::string path;
  };

  // compile.cpp
  void fold_type_unions();
  result<void> choose_dialect();
  result<void> root_id();
  // A keyword of another dialect, not of this document's (prefixItems in draft 7): refused where
  // something is validated (as every unknown keyword), an annotation in a check_only schema.
  bool foreign_keyword(std::string_view k) const;
  result<bool> dialect_keyword(node& n, std::string_view k, const boost::json::value& val, const std::string& kp,
                               std::size_t depth, bool tuple_items, member_names& names);
  result<std::uint32_t> compile_schema(const boost::json::value& v, const std::string& path, std::size_t depth,
                                       bool is_root = false);
  result<void> compile_members(node& n, const boost::json::object& o, const std::string& path, object_scope& scope);
  result<void> compile_member(node& n, std::string_view k, const boost::json::value& val, const std::string& kp,
                              object_scope& scope);
  result<void> compile_definitions(std::string_view k, const boost::json::value& val, const std::string& kp,
                                   std::size_t depth);
  static void settle_conditionals(node& n);
  result<void> resolve_refs();
  static bool is_container_keyword(std::string_view t);
  static const boost::json::value* step(const boost::json::value& v, const std::string& token);
  // OpenAI's total string length: adds `chars` to the count of property names, $defs names and
  // enum/const strings; true once it passes max_total_chars. The refusal names the place where it
  // did (too_many_chars), its pointer built only then.
  bool add_chars(std::size_t chars) noexcept {
    total_chars_ += chars;
    return total_chars_ > lim_.max_total_chars;
  }
  error too_many_chars(const std::string& pointer) const;

  // compile_depth.cpp
  result<void> check_resolved_depth();

  // compile_keywords.cpp: each sets what keyword k means in n and returns true, or returns false
  // for a keyword outside its family.
  result<bool> assertion_keyword(node& n, std::string_view k, const boost::json::value& val, const std::string& kp,
                                 bool has_contains);
  result<bool> value_keyword(node& n, std::string_view k, const boost::json::value& val, const std::string& kp);
  result<bool> bound_keyword(node& n, std::string_view k, const boost::json::value& val, const std::string& kp,
                             bool has_contains);
  result<bool> string_keyword(node& n, std::string_view k, const boost::json::value& val, const std::string& kp);
  result<bool> subschema_keyword(node& n, std::string_view k, const boost::json::value& val, const std::string& kp,
                                 std::size_t child_depth);
  result<bool> object_keyword(node& n, std::string_view k, const boost::json::value& val, const std::string& kp,
                              std::size_t child_depth, member_names& names);
  result<std::uint8_t> parse_type(const boost::json::value& v, const std::string& path);
  result<std::uint32_t> parse_count(const boost::json::value& v, const std::string& path);
  static std::uint32_t clamp32(std::uint64_t x);
  result<std::vector<std::string>> parse_names(const boost::json::value& v, const std::string& path);

  // compile_key_table.cpp
  struct key_names;
  result<void> build_key_table(node& n, const member_names& names, const std::string& path);
  result<void> count_new_names(key_names& keys, const std::string& path, const char* keyword);
  std::vector<dependency> track_dependencies(const member_names& names, key_names& keys);
  std::vector<key_entry> key_entries(std::map<std::string, key_entry>& table);
  static void link_schema_order(node& n, const member_names& names, const std::map<std::string, key_entry>& table,
                                std::vector<key_entry>& entries);
  static std::vector<key_slot> place_keys(node& n, const std::vector<key_entry>& entries);

  const boost::json::value& root_;
  const compile_limits& lim_;
  const bool check_only_;
  program& p_;
  schema::dialect dialect_ = schema::dialect::draft2020_12;
  std::string root_id_;
  std::unordered_map<const boost::json::value*, std::uint32_t> memo_;
  std::vector<pending_ref> refs_;
  bool has_refs_ = false;  // without a $ref the lexical depth check of compile_schema is the whole story
  // check_only: (node, subschema) pairs the nodes do not hold (member_names::unmatched), so the
  // depth pass still sees them.
  std::vector<side_child> side_children_;
  std::size_t properties_ = 0;
  std::size_t enum_values_ = 0;
  std::size_t total_chars_ = 0;
};

// Characters of a JSON string as OpenAI counts them: Unicode code points (UTF-8 lead bytes).
std::size_t code_points(std::string_view s) noexcept;
// The characters of every string in `v` (object member names included); numbers and literals
// count nothing. Recursion bounded by check_shape's max_json_depth.
std::size_t string_chars(const boost::json::value& v) noexcept;

}  // namespace sluice::schema::detail
