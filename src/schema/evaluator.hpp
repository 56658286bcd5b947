// Internal: the one validation engine. It consumes JSON value events (from a DOM walk, the SAX
// parser of validate_text, or a stream) and evaluates every active subschema as each token
// arrives, so a violation is reported at the first offending token. Memory is bounded by the
// schema and the nesting depth (validate_limits), never by the document size.
// One evaluator per validation at a time; not thread-safe; reusable via reset().
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "schema/program.hpp"
#include "schema/schema.hpp"
#include "schema/value_hash.hpp"

namespace sluice::schema::detail {

enum class json_kind : std::uint8_t { null, boolean, number, string, array, object };

struct number_value {
  enum class rep : std::uint8_t { i64, u64, f64 } r = rep::i64;
  std::int64_t i = 0;
  std::uint64_t u = 0;
  double d = 0;
};

// Which keyword a failure is about (drives the message and the schema path).
enum class keyword : std::uint8_t {
  false_schema, type, enum_, const_, minimum, maximum, exclusive_minimum, exclusive_maximum, multiple_of,
  min_length, max_length, pattern, format, min_items, max_items, items, contains, min_contains, max_contains,
  unique_items, additional_properties, property_names, required, min_properties, max_properties,
  dependent_required, any_of, one_of, not_, then_, else_,
};

class evaluator {
 public:
  evaluator() = default;
  // Points the evaluator at a program and clears all state; buffers keep their capacity.
  void reset(const program& p, const validate_limits& lim);

  // Events. Each returns false once the verdict is final (a violation or a limit), after which
  // error() holds it and further events are ignored.
  bool begin_value(json_kind k);
  bool null_value();
  bool bool_value(bool b);
  bool number_begin();              // the first characters of a number (early type check)
  bool number_end(number_value v);  // the complete number
  bool string_begin();
  bool string_part(std::string_view s);
  bool string_end();
  bool key(std::string_view k);  // a complete member name; the member's value follows
  bool end_container();

  // Marks the verdict as malformed input or an exceeded limit (used by the parser drivers).
  void fail_external(validation_error::kind what, std::string message);

  bool failed() const noexcept { return stopped_; }
  bool complete() const noexcept { return complete_; }
  const validation_error& error() const noexcept { return error_; }
  std::string current_path() const { return path_to(depth_ == 0 ? 0 : depth_ - 1); }

 private:
  enum class role : std::uint8_t { root, must, any_of, one_of, not_, if_, then_, else_, contains, prop_name };
  enum class tri : std::uint8_t { unknown, pass, fail };

  struct failure {
    keyword kw = keyword::type;
    std::uint32_t node = 0;
    std::uint32_t depth = 0;
    std::uint32_t detail = 0;
  };

  struct eval {
    const node* n = nullptr;
    std::uint32_t node_idx = 0;
    std::uint32_t parent = 0;
    std::uint32_t depth = 0;
    std::uint32_t bits = 0;  // offset into bits_ of the "seen tracked names" bitset
    std::uint32_t any_fail = 0, one_fail = 0, one_pass = 0, contains = 0;
    role r = role::root;
    tri state = tri::unknown;
    tri if_state = tri::unknown, then_state = tri::unknown, else_state = tri::unknown;
    bool any_pass = false;
    failure why;
  };

  struct hash128 {
    std::size_t operator()(const value_hash& h) const noexcept { return static_cast<std::size_t>(h.a ^ h.b); }
  };

  struct frame {
    std::uint32_t evals_begin = 0;
    std::uint32_t bits_begin = 0;
    json_kind kind = json_kind::null;
    bool begun = false;
    bool is_name = false;     // a propertyNames check of a key, not a member value
    bool in_object = false;   // position in the parent: key (true) or index
    std::string key;
    std::uint32_t index = 0;
    std::uint32_t items = 0;  // members or items started so far
    bool need_hash = false, need_content = false, count_chars = false, check_max_length = false;
    bool track_unique = false;
    bool has_property_names = false;  // an object some evaluation checks with propertyNames
    std::string content;
    std::uint32_t code_points = 0;
    number_value num;
    bool boolean = false;
    string_hasher sh;
    array_hasher ah;
    object_hasher oh;
    value_hash hash;
    std::unordered_set<value_hash, hash128> seen;
  };

  bool push_frame();
  std::uint32_t spawn(std::uint32_t node_idx, std::uint32_t parent, role r);
  void start_checks(std::uint32_t d);
  bool end_value();
  void end_checks(std::uint32_t ei, const frame& f);
  void fail(std::uint32_t ei, keyword kw, std::uint32_t detail = 0);
  void fail(std::uint32_t ei, keyword kw, std::uint32_t detail, std::uint32_t depth);
  void fail_with(std::uint32_t ei, const failure& why);
  void pass(std::uint32_t ei);
  void notify(std::uint32_t parent, const eval& child, bool passed);
  void check_conditional(std::uint32_t ei);
  void open_member(std::uint32_t d, std::string_view k);
  void open_item(std::uint32_t d);
  void check_property_name(std::uint32_t d, std::string_view k);
  void finish_child(std::uint32_t d);
  void limit(std::string message);
  std::string path_to(std::uint32_t depth) const;
  std::string describe(const failure& f) const;
  std::string schema_path(const failure& f) const;

  const program* p_ = nullptr;
  validate_limits lim_;
  std::vector<frame> frames_;
  std::uint32_t depth_ = 0;  // frames in use
  std::vector<eval> evals_;
  std::vector<std::uint64_t> bits_;
  bool stopped_ = false;
  bool complete_ = false;
  validation_error error_;
};

}  // namespace sluice::schema::detail
