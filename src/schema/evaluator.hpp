// Internal: the one validation engine. It consumes JSON value events (from a DOM walk, the SAX
// parser of validate_text, or a stream) and evaluates every active subschema as each token
// arrives, so a violation is reported at the first offending token. Memory is bounded by the
// schema and the nesting depth (validate_limits), never by the document size.
// One evaluator per validation at a time; not thread-safe; reusable via reset().
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "schema/program.hpp"
#include "schema/schema.hpp"
#include "schema/value_hash.hpp"

namespace sluice::schema::detail {

enum class json_kind : std::uint8_t { null, boolean, number, string, array, object };

// A member name kept for paths, messages and object hashes. Names up to inline_bytes (nearly all)
// are copied into the frame itself: no allocation and no std::string bookkeeping per member.
class member_name {
 public:
  static constexpr std::size_t inline_bytes = 46;
  // A name that lives as long as the validation (the compiled schema's own copy of a property
  // name the member matched): kept as a view, nothing copied.
  void refer(std::string_view k) noexcept {
    ext_ = k.data();
    len_ = static_cast<std::uint32_t>(k.size());
  }
  void assign(std::string_view k) {
    ext_ = nullptr;
    const std::size_t n = k.size();
    const char* src = k.data();
    len_ = static_cast<std::uint32_t>(n);
    // Short names by overlapping fixed-size moves (no call into memcpy for a few bytes).
    if (n >= 8 && n <= 16) {
      copy_fixed<8>(buf_, src);
      copy_fixed<8>(buf_ + n - 8, src + n - 8);
    } else if (n >= 4 && n < 8) {
      copy_fixed<4>(buf_, src);
      copy_fixed<4>(buf_ + n - 4, src + n - 4);
    } else if (n > 0 && n < 4) {  // first, middle, last: every byte of 1-3, no loop
      buf_[0] = src[0];
      buf_[n >> 1] = src[n >> 1];
      buf_[n - 1] = src[n - 1];
    } else if (n == 0) {
    } else if (n <= inline_bytes) {
      std::memcpy(buf_, src, n);
    } else {
      long_.assign(k);
    }
  }
  std::string_view view() const noexcept {
    if (ext_) return std::string_view(ext_, len_);
    return len_ <= inline_bytes ? std::string_view(buf_, len_) : std::string_view(long_);
  }
  std::string str() const { return std::string(view()); }

 private:
  template <std::size_t N>
  static void copy_fixed(char* dst, const char* src) noexcept {
    std::memcpy(dst, src, N);
  }

  const char* ext_ = nullptr;
  char buf_[inline_bytes];
  std::uint32_t len_ = 0;
  std::string long_;
};

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
  bool number_value_whole(number_value v);  // a number seen whole: number_begin + number_end
  bool string_whole(std::string_view s);    // a string seen whole: string_begin + string_part + string_end
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
    std::uint32_t next_key = no_node;  // objects: the member name expected next (node::first_key)
    role r = role::root;
    tri state = tri::unknown;
    tri if_state = tri::unknown, then_state = tri::unknown, else_state = tri::unknown;
    bool any_pass = false;
    failure why;
  };

  struct hash128 {
    std::size_t operator()(const value_hash& h) const noexcept { return static_cast<std::size_t>(h.a ^ h.b); }
  };

  // Hot fields first (one cache line for what every value touches), the name next, then state
  // only some values use: content and seen are cleared when a value starts to use them, not on
  // every push, so a plain value never touches their lines.
  struct frame {
    std::uint32_t evals_begin = 0;
    std::uint32_t bits_begin = 0;
    std::uint32_t index = 0;
    std::uint32_t items = 0;  // members or items started so far
    std::uint32_t code_points = 0;
    // A member value's one evaluation, not yet spawned (see open_member): the node, and the
    // evaluation it reports to. no_node when none is deferred.
    std::uint32_t pending = no_node;
    std::uint32_t pending_parent = 0;
    json_kind kind = json_kind::null;
    bool begun = false;
    bool is_name = false;     // a propertyNames check of a key, not a member value
    bool in_object = false;   // position in the parent: key (true) or index
    bool need_hash = false, need_content = false, count_chars = false, check_max_length = false;
    bool track_unique = false;
    bool has_property_names = false;  // an object some evaluation checks with propertyNames
    bool boolean = false;
    number_value num;
    member_name key;
    std::string content;
    string_hasher sh;
    array_hasher ah;
    object_hasher oh;
    value_hash hash;
    std::unordered_set<value_hash, hash128> seen;
    // Objects: key_hash of each member name so far, to refuse a repeated name (note_member_name);
    // scanned while few, then indexed in `seen` (an object never tracks uniqueItems).
    std::vector<std::uint64_t> names;
  };

  // The stacks (evaluator_stack.hpp, inlined where used).
  bool push_frame();
  std::uint32_t alloc_bits(std::uint32_t words);  // zeroed words at the top of bits_
  // An evaluation of node_idx in the top frame; its in-place children (allOf, $ref, ...) follow it.
  std::uint32_t spawn(std::uint32_t node_idx, std::uint32_t parent, role r);

  // A value's life in its frame (evaluator.cpp).
  void spawn_must(std::uint32_t node_idx, std::uint32_t parent);  // spawn(), out of line
  // Spawns frame d's deferred evaluation, if it has one; false once the verdict is final.
  bool materialize(std::uint32_t d) { return frames_[d].pending == no_node || spawn_pending(d); }
  bool spawn_pending(std::uint32_t d);
  bool begin_in(std::uint32_t d, json_kind k);
  void start_checks(std::uint32_t d);
  void start_details(frame& f, eval& e);
  bool end_value();
  void end_checks(std::uint32_t ei, const frame& f);
  void finish_child(std::uint32_t d);

  // Opening array items and object members (evaluator_children.cpp).
  // The frame of the value that begins (opening an array item); npos on error.
  std::uint32_t value_frame() {
    if (depth_ != 0 && !frames_[depth_ - 1].begun) [[likely]] return depth_ - 1;  // a member's value, the root
    return value_frame_slow();
  }
  std::uint32_t value_frame_slow();
  void open_item(std::uint32_t d);
  void check_property_name(std::uint32_t d, std::string_view k);
  void open_member(std::uint32_t d, std::string_view k);
  bool open_lone_member(frame& f, std::uint32_t d, std::uint32_t i, std::uint32_t count, std::string_view k);
  void open_members(std::uint32_t d, std::uint32_t end, std::uint32_t count, std::string_view k);
  bool refuse_key(std::string_view k);
  // Member names already seen in the object of frame d (frame::names): false, with the verdict
  // duplicate_member, when k repeats one.
  bool note_member_name(std::uint32_t d, std::uint32_t count, std::string_view k, std::uint64_t h);
  bool note_member_name_indexed(std::uint32_t d, std::string_view k, std::uint64_t h);
  void duplicate_member(std::uint32_t d, std::string_view k);
  const key_entry* find_key(const node& n, std::uint32_t guess, std::string_view k, std::uint64_t& h,
                            bool& hashed) const;
  const key_entry* predicted_key(const node& n, std::uint32_t guess, std::string_view k) const;
  const key_entry* hashed_key(const node& n, std::string_view k) const;

  // Scalars and their fast paths (evaluator_scalar.cpp).
  const node* deferred_plain(std::uint32_t d, std::uint8_t type_bit) const;
  bool close_deferred();
  eval* lone_eval(std::uint32_t d, std::uint8_t type_bit);
  bool close_lone(std::uint32_t d, eval& e, std::optional<keyword> violation);
  std::optional<keyword> number_violation(const node& n, const number_value& v);
  std::optional<keyword> string_violation(const node& n, std::string_view content, std::uint32_t code_points);
  std::optional<keyword> whole_string_violation(const node& n, std::string_view s);
  std::optional<keyword> content_violation(const node& n, std::string_view content);

  // Applicators and verdicts (evaluator_verdicts.cpp).
  void spawn_inplace(std::uint32_t idx);
  void fail(std::uint32_t ei, keyword kw, std::uint32_t detail = 0);
  void fail(std::uint32_t ei, keyword kw, std::uint32_t detail, std::uint32_t depth);
  void fail_with(std::uint32_t ei, const failure& why);
  void notify(std::uint32_t parent, const eval& child, bool passed);
  void limit(std::string message);
  std::string path_to(std::uint32_t depth) const;

  // Messages (evaluator_messages.cpp).
  std::string describe(const failure& f) const;
  std::string schema_path(const failure& f) const;

  const program* p_ = nullptr;
  validate_limits lim_;
  std::vector<frame> frames_;  // nframes_ of them, reused
  std::uint32_t nframes_ = 0;
  std::uint32_t depth_ = 0;  // frames in use
  std::vector<eval> evals_;  // storage (evals_cap_ of them); the first neval_ are in use
  std::uint32_t neval_ = 0, evals_cap_ = 0;
  std::vector<std::uint64_t> bits_;  // storage; the first nbits_ are in use
  std::uint32_t nbits_ = 0;
  bool stopped_ = false;
  bool complete_ = false;
  validation_error error_;
};

}  // namespace sluice::schema::detail
