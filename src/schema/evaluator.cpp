// The evaluation engine. Evaluations ("this subschema against this value") live in one stack
// (evals_), grouped by the value they judge (frames_). Applicators that judge the same value
// (allOf, anyOf, $ref, ...) add sibling evaluations in the same frame; applicators that judge a
// member or item add evaluations in the next frame. A finished evaluation reports to its parent,
// whose role-specific rule (must pass, any of, one of, not, if/then/else, contains) decides at once
// whenever it can, so failures surface at the first token that makes them certain. Scalar values
// (and their one-step fast path) are in evaluator_scalar.cpp.
#include "schema/evaluator.hpp"

#include <algorithm>
#include <limits>

#include "schema/compile_support.hpp"

namespace sluice::schema::detail {
namespace {

constexpr std::uint32_t npos32 = std::numeric_limits<std::uint32_t>::max();

const key_entry* lookup(const program& p, const node& n, std::string_view k, std::uint64_t h) {
  const std::uint32_t mask = n.key_slots.size - 1;
  const key_slot* slots = p.slots.data() + n.key_slots.begin;
  const auto hi = static_cast<std::uint32_t>(h >> 32);
  for (std::uint32_t s = key_slot_of(h, n.key_mult, n.key_shift);; s = (s + 1) & mask) {
    const key_slot slot = slots[s];
    if (!slot.entry) return nullptr;
    if (slot.hash_hi == hi) {
      const key_entry& e = p.keys[n.keys.begin + slot.entry - 1];
      if (e.hash == h && e.name.len == k.size() && same_key(p.text.data() + e.name.off, k.data(), k.size())) return &e;
    }
    if (n.key_perfect) return nullptr;  // every key sits at its first slot
  }
}

value_hash hash_number(const number_value& v) {
  switch (v.r) {
    case number_value::rep::i64: return hash_int64(v.i);
    case number_value::rep::u64: return hash_uint64(v.u);
    case number_value::rep::f64: return hash_double(v.d);
  }
  return {};
}

}  // namespace

void evaluator::reset(const program& p, const validate_limits& lim) {
  p_ = &p;
  lim_ = lim;
  depth_ = 0;
  neval_ = nbits_ = 0;
  stopped_ = complete_ = false;
  error_ = {};
  if (push_frame()) spawn(0, npos32, role::root);
}

inline std::uint32_t evaluator::alloc_bits(std::uint32_t words) {
  const std::uint32_t at = nbits_;
  nbits_ += words;
  if (bits_.size() < nbits_) [[unlikely]] bits_.resize(nbits_);
  if (words == 1) bits_[at] = 0;  // up to 64 names (no call to memset)
  else std::fill_n(bits_.begin() + at, words, 0);
  return at;
}

[[gnu::always_inline]] inline bool evaluator::push_frame() {
  if (depth_ >= lim_.max_depth) {
    limit("the document nests deeper than " + std::to_string(lim_.max_depth) + " levels");
    return false;
  }
  if (depth_ == nframes_) [[unlikely]] {  // grows once per new depth, then reused
    frames_.emplace_back();
    ++nframes_;
  }
  frame& f = frames_[depth_++];
  f.evals_begin = neval_;
  f.bits_begin = nbits_;
  f.begun = f.is_name = f.in_object = false;
  f.items = f.code_points = 0;
  f.pending = no_node;
  f.need_hash = f.need_content = f.count_chars = f.check_max_length = f.track_unique = false;
  f.has_property_names = false;
  // content and seen are cleared by start_details when a value starts to use them; hashers by
  // start_checks when a hash is needed.
  return true;
}

[[gnu::always_inline]] inline std::uint32_t evaluator::spawn(std::uint32_t ni, std::uint32_t parent, role r) {
  if (neval_ >= lim_.max_active_evaluations) {
    limit("more than " + std::to_string(lim_.max_active_evaluations) + " subschema evaluations at once");
    return npos32;
  }
  const std::uint32_t idx = neval_++;
  if (idx == evals_cap_) [[unlikely]] {  // storage grows to the high-water mark, then is reused
    evals_.emplace_back();
    ++evals_cap_;
  }
  const node& n = p_->nodes[ni];
  eval& e = evals_[idx];
  e.n = &n;
  e.node_idx = ni;
  e.parent = parent;
  e.depth = depth_ - 1;
  e.bits = 0;
  e.any_fail = e.one_fail = e.one_pass = e.contains = 0;
  e.next_key = n.first_key;
  e.r = r;
  e.state = e.if_state = e.then_state = e.else_state = tri::unknown;
  e.any_pass = false;  // `why` is written by fail_with() before anything reads it
  if (n.flags & f_inplace) spawn_inplace(idx);
  return idx;
}

bool evaluator::spawn_pending(std::uint32_t d) {
  frame& f = frames_[d];
  const std::uint32_t ni = f.pending;
  f.pending = no_node;
  spawn(ni, f.pending_parent, role::must);
  return !stopped_;
}

[[gnu::noinline]] void evaluator::spawn_must(std::uint32_t node_idx, std::uint32_t parent) {
  spawn(node_idx, parent, role::must);
}

void evaluator::spawn_inplace(std::uint32_t idx) {
  const node& n = *evals_[idx].n;
  auto each = [&](span32 s, role rr) {
    for (std::uint32_t i = 0; i < s.size && !stopped_; ++i) spawn(p_->indices[s.begin + i], idx, rr);
  };
  if (n.ref != no_node) spawn(n.ref, idx, role::must);
  each(n.all_of, role::must);
  each(n.any_of, role::any_of);
  each(n.one_of, role::one_of);
  if (n.not_ != no_node) spawn(n.not_, idx, role::not_);
  if (n.if_ != no_node) {
    spawn(n.if_, idx, role::if_);
    if (n.then_ != no_node) spawn(n.then_, idx, role::then_);
    if (n.else_ != no_node) spawn(n.else_, idx, role::else_);
  }
}

// Per json_kind (null, boolean, number, string, array, object): the type bits a value of that kind
// satisfies, and the node flags that give it work at its first token and at its end.
constexpr std::uint8_t kind_types[6] = {t_null, t_boolean, t_number | t_integer, t_string, t_array, t_object};
constexpr std::uint32_t kind_start_flags[6] = {0, 0, 0, f_string, f_unique, f_object};
constexpr std::uint32_t kind_end_flags[6] = {0, 0, f_numeric | f_integer_only, f_string, f_array, f_object};

// First token of the value in frame d: type checks and what the rest of the value must collect.
[[gnu::always_inline]] inline void evaluator::start_checks(std::uint32_t d) {
  frame& f = frames_[d];
  if (d > 0 && !f.is_name) {
    const frame& parent = frames_[d - 1];
    f.need_hash = parent.need_hash || parent.track_unique;
  }
  const auto k = static_cast<unsigned>(f.kind);
  const std::uint8_t tb = kind_types[k];
  const std::uint32_t interesting = f_enum | kind_start_flags[k];
  eval* ev = evals_.data();  // fail() only decides evaluations, it adds none
  const auto end = neval_;
  for (std::uint32_t i = f.evals_begin; i < end; ++i) {
    eval& e = ev[i];
    if (e.state != tri::unknown) continue;
    const node& n = *e.n;
    if (!(n.types & tb) || !(n.any_types & tb) || (n.flags & f_false)) [[unlikely]] {
      fail(i, (n.flags & f_false) ? keyword::false_schema : !(n.types & tb) ? keyword::type : keyword::any_of);
      if (stopped_) return;
      continue;
    }
    if (n.flags & interesting) start_details(f, e);
  }
  if (f.need_hash) {
    f.sh = {};
    f.ah = {};
    f.oh = {};
  }
}

// The kind-specific part of start_checks, for nodes that have any.
[[gnu::always_inline]] inline void evaluator::start_details(frame& f, eval& e) {
  const node& n = *e.n;
  if (n.flags & f_enum) f.need_hash = true;
  switch (f.kind) {
    case json_kind::string:
      if (n.flags & f_string) {
        f.count_chars = true;
        if ((n.flags & f_needs_content) && !f.need_content) {
          f.need_content = true;
          f.content.clear();
        }
        if (n.flags & f_max_length) f.check_max_length = true;
      }
      break;
    case json_kind::array:
      if ((n.flags & f_unique) && !f.track_unique) {
        f.track_unique = true;
        if (!f.seen.empty()) f.seen.clear();
      }
      break;
    case json_kind::object:
      if (n.property_names != no_node) f.has_property_names = true;
      if (n.tracked_names.size) e.bits = alloc_bits((n.tracked_names.size + 63) / 64);
      break;
    default:
      break;
  }
}

std::uint32_t evaluator::value_frame_slow() {
  if (depth_ == 0) {
    fail_external(validation_error::kind::malformed_json, "more than one JSON value");
    return npos32;
  }
  std::uint32_t d = depth_ - 1;
  if (frames_[d].begun) {
    if (frames_[d].kind != json_kind::array) {
      fail_external(validation_error::kind::malformed_json, "an object member without a key");
      return npos32;
    }
    open_item(d);
    if (stopped_) return npos32;
    d = depth_ - 1;
  }
  return d;
}

bool evaluator::begin_value(json_kind k) {
  if (stopped_) return false;
  const std::uint32_t d = value_frame();
  if (d == npos32) return false;
  return begin_in(d, k);
}

bool evaluator::begin_in(std::uint32_t d, json_kind k) {
  if (!materialize(d)) return false;
  frame& f = frames_[d];
  f.begun = true;
  f.kind = k;
  // A number is judged by its type at its first character, before its value is known (a stream
  // may not have the rest yet): a message written now must not read a previous value.
  if (k == json_kind::number) f.num = {};
  start_checks(d);
  return !stopped_;
}

[[gnu::always_inline]] inline void evaluator::open_item(std::uint32_t d) {
  const std::uint32_t index = frames_[d].items++;
  const auto end = neval_;
  if (!push_frame()) return;
  frame& f = frames_[depth_ - 1];
  f.in_object = false;
  f.index = index;
  for (std::uint32_t i = frames_[d].evals_begin; i < end && !stopped_; ++i) {
    if (evals_[i].state != tri::unknown) continue;
    const node& n = *evals_[i].n;
    if (!(n.flags & f_array)) continue;
    if (index >= n.max_items) {
      fail(i, keyword::max_items, index, depth_ - 1);
      continue;
    }
    std::uint32_t child = index < n.prefix_items.size ? p_->indices[n.prefix_items.begin + index] : n.items;
    if (child != no_node) {
      if (p_->nodes[child].flags & f_false) {
        fail(i, keyword::items, index, depth_ - 1);
        continue;
      }
      spawn(child, i, role::must);
    }
    if (n.contains != no_node) spawn(n.contains, i, role::contains);
  }
}

void evaluator::check_property_name(std::uint32_t d, std::string_view k) {
  const auto end = neval_;
  if (!push_frame()) return;
  frame& f = frames_[depth_ - 1];
  f.is_name = f.in_object = true;
  f.key.assign(k);
  for (std::uint32_t i = frames_[d].evals_begin; i < end && !stopped_; ++i)
    if (evals_[i].state == tri::unknown && evals_[i].n->property_names != no_node)
      spawn(evals_[i].n->property_names, i, role::prop_name);
  if (stopped_) return;
  // The key is judged as a string value of its own.
  if (begin_value(json_kind::string) && string_part(k)) string_end();
}

// The property-table entry for member name k in node n, if any: the name expected next in schema
// order (`guess`) is compared first, the hash table is searched only when that fails. The hash is
// computed at most once per member (h, hashed) however many evaluations look the name up.
[[gnu::always_inline]] inline const key_entry* evaluator::find_key(const node& n, std::uint32_t guess,
                                                                     std::string_view k, std::uint64_t& h,
                                                                     bool& hashed) const {
  if (const key_entry* g = predicted_key(n, guess, k)) return g;
  if (!hashed) {
    h = key_hash(k);
    hashed = true;
  }
  return lookup(*p_, n, k, h);
}

[[gnu::always_inline]] inline const key_entry* evaluator::predicted_key(const node& n, std::uint32_t guess,
                                                                          std::string_view k) const {
  if (guess == no_node) return nullptr;
  const key_entry& g = p_->keys[n.keys.begin + guess];
  return g.name.len == k.size() && same_key(p_->text.data() + g.name.off, k.data(), k.size()) ? &g : nullptr;
}

// The hash lookup for one evaluation, kept out of line: the prediction usually decides.
[[gnu::noinline]] const key_entry* evaluator::hashed_key(const node& n, std::string_view k) const {
  return lookup(*p_, n, k, key_hash(k));
}

// The common shape: one evaluation judges the object (no allOf/$ref siblings), nothing hashes it
// and it has no patternProperties, so the member's value gets at most one evaluation. That one is
// deferred (frame::pending) rather than spawned: a scalar that passes never creates it, any other
// value spawns it first (materialize). Returns false, having changed nothing, when the shape does
// not apply.
[[gnu::always_inline]] inline bool evaluator::open_lone_member(frame& f, std::uint32_t i, std::uint32_t count,
                                                                std::string_view k) {
  eval& e = evals_[i];
  const node& n = *e.n;
  if (e.state != tri::unknown || !(n.flags & f_object) || n.pattern_props.size || count > n.max_properties)
    return false;
  const key_entry* ke = nullptr;
  if (n.keys.size) {
    ke = predicted_key(n, e.next_key, k);
    if (!ke) ke = hashed_key(n, k);
    e.next_key = ke ? ke->next : no_node;
  }
  // The member's name, for paths and hashes, before anything below can fail.
  if (ke) f.key.refer(p_->str(ke->name));
  else f.key.assign(k);
  std::uint32_t child = no_node;
  if (ke) {
    if (ke->tracked != no_node) bits_[e.bits + ke->tracked / 64] |= std::uint64_t{1} << (ke->tracked % 64);
    child = ke->prop;
  }
  if (child == no_node && n.additional != no_node) {
    if (p_->nodes[n.additional].flags & f_false) fail(i, keyword::additional_properties, 0, depth_ - 1);
    else child = n.additional;
  }
  if (child != no_node) {
    // At the evaluation limit, spawn() reports it now, as the general path does.
    if (!(p_->nodes[child].flags & f_inplace) && neval_ < lim_.max_active_evaluations) {
      f.pending = child;
      f.pending_parent = i;
    } else {
      spawn_must(child, i);
    }
  }
  return true;
}

[[gnu::always_inline]] inline void evaluator::open_member(std::uint32_t d, std::string_view k) {
  const std::uint32_t count = ++frames_[d].items;
  const std::uint32_t begin = frames_[d].evals_begin;
  const auto end = neval_;
  const bool lone = end - begin == 1 && !frames_[d].need_hash;
  if (!push_frame()) return;
  frame& f = frames_[depth_ - 1];  // frames_ does not grow again below
  f.in_object = true;
  if (!lone || !open_lone_member(f, begin, count, k)) open_members(d, end, count, k);
}

// open_member for any number of evaluations: each looks the name up (sharing one hash) and spawns
// what applies to the member in the new top frame.
[[gnu::noinline]] void evaluator::open_members(std::uint32_t d, std::uint32_t end, std::uint32_t count,
                                               std::string_view k) {
  const std::uint32_t md = depth_ - 1;
  frame& f = frames_[md];
  // The member's name is kept for paths and hashes: as a view of the schema's own copy when a
  // `properties` entry matches (the common case), else copied. Until then (a failure may already
  // write a path) it is a view of the caller's `k`, which outlives this call.
  f.key.refer(k);
  std::uint64_t h = 0;
  bool hashed = false;  // the hash is only needed when the predicted name is not this one
  const key_entry* named = nullptr;
  for (std::uint32_t i = frames_[d].evals_begin; i < end && !stopped_; ++i) {
    // spawn() may grow evals_: index it afresh each time.
    if (evals_[i].state != tri::unknown) continue;
    const node& n = *evals_[i].n;
    if (!(n.flags & f_object)) continue;
    if (count > n.max_properties) {
      fail(i, keyword::max_properties, count, d);
      continue;
    }
    bool matched = false;
    if (n.keys.size) {
      const key_entry* ke = find_key(n, evals_[i].next_key, k, h, hashed);
      evals_[i].next_key = ke ? ke->next : no_node;
      if (ke) {
        named = ke;
        if (ke->tracked != no_node) bits_[evals_[i].bits + ke->tracked / 64] |= std::uint64_t{1} << (ke->tracked % 64);
        if (ke->prop != no_node) {
          spawn(ke->prop, i, role::must);
          matched = true;
        }
      }
    }
    for (std::uint32_t j = 0; j < n.pattern_props.size && !stopped_; ++j) {
      const pattern_entry& pe = p_->patterns[n.pattern_props.begin + j];
      if (pattern_matches(*p_->regexes[pe.regex], k)) {
        spawn(pe.node, i, role::must);
        matched = true;
      }
    }
    if (!matched && n.additional != no_node) {
      if (p_->nodes[n.additional].flags & f_false) fail(i, keyword::additional_properties, 0, md);
      else spawn(n.additional, i, role::must);
    }
  }
  if (named) f.key.refer(p_->str(named->name));
  else f.key.assign(k);
}

bool evaluator::key(std::string_view k) {
  if (stopped_) return false;
  if (depth_ == 0 || !frames_[depth_ - 1].begun || frames_[depth_ - 1].kind != json_kind::object ||
      k.size() > lim_.max_string_bytes) [[unlikely]]
    return refuse_key(k);
  const std::uint32_t d = depth_ - 1;
  if (frames_[d].has_property_names) {
    check_property_name(d, k);
    if (stopped_) return false;
  }
  open_member(d, k);
  return !stopped_;
}

// A member name that cannot open a member: outside an object, or over the length limit.
[[gnu::cold, gnu::noinline]] bool evaluator::refuse_key(std::string_view k) {
  if (depth_ == 0 || !frames_[depth_ - 1].begun || frames_[depth_ - 1].kind != json_kind::object)
    fail_external(validation_error::kind::malformed_json, "a member name outside an object");
  else if (k.size() > lim_.max_string_bytes)
    limit("a member name is longer than " + std::to_string(lim_.max_string_bytes) + " bytes");
  return false;
}

bool evaluator::end_container() {
  if (stopped_) return false;
  if (depth_ == 0) {
    fail_external(validation_error::kind::malformed_json, "unbalanced container end");
    return false;
  }
  if (!materialize(depth_ - 1)) return false;
  return end_value();
}

// The value in the top frame is complete: final checks (innermost evaluations first, so every
// in-place child has reported before its parent decides), then report to the container.
bool evaluator::end_value() {
  const std::uint32_t d = depth_ - 1;
  frame& f = frames_[d];
  if (f.need_hash) {
    switch (f.kind) {
      case json_kind::null: f.hash = hash_null(); break;
      case json_kind::boolean: f.hash = hash_bool(f.boolean); break;
      case json_kind::number: f.hash = hash_number(f.num); break;
      case json_kind::string: f.hash = f.sh.finish(); break;
      case json_kind::array: f.hash = f.ah.finish(); break;
      case json_kind::object: f.hash = f.oh.finish(); break;
    }
  }
  // Node flags that give this kind of value something to check at its end.
  const std::uint32_t interesting = kind_end_flags[static_cast<unsigned>(f.kind)] | f_enum | f_inplace;
  // No evaluation is added below (only decided), so evals_ stays where it is.
  eval* ev = evals_.data();
  for (auto i = neval_; i-- > f.evals_begin;) {
    eval& e = ev[i];
    if (e.state != tri::unknown) continue;
    if (e.n->flags & interesting) {
      end_checks(i, f);
      if (stopped_) return false;
      if (e.state != tri::unknown) continue;
    }
    e.state = tri::pass;
    if (e.r != role::root && e.r != role::must) {  // a passing `must` child changes nothing
      notify(e.parent, e, true);
      if (stopped_) return false;
    }
  }
  neval_ = f.evals_begin;
  nbits_ = f.bits_begin;
  --depth_;
  if (d == 0) {
    complete_ = true;
    return true;
  }
  if (!f.is_name) {
    const frame& p = frames_[d - 1];
    if (p.need_hash || p.track_unique) finish_child(d);
  }
  return !stopped_;
}

void evaluator::finish_child(std::uint32_t d) {
  frame& p = frames_[d - 1];
  const frame& c = frames_[d];
  if (p.kind == json_kind::object) {
    if (p.need_hash) p.oh.add(hash_string(c.key.view()), c.hash);
    return;
  }
  if (p.need_hash) p.ah.add(c.hash);
  if (!p.track_unique) return;
  if (p.seen.size() >= lim_.max_unique_items) {
    limit("more than " + std::to_string(lim_.max_unique_items) + " items to compare for uniqueItems");
    return;
  }
  if (p.seen.insert(c.hash).second) return;
  const auto end = neval_;
  for (std::uint32_t i = p.evals_begin; i < end && !stopped_; ++i)
    if (evals_[i].state == tri::unknown && (evals_[i].n->flags & f_unique)) fail(i, keyword::unique_items, c.index, d);
}

[[gnu::always_inline]] inline void evaluator::end_checks(std::uint32_t ei, const frame& f) {
  const eval& e = evals_[ei];
  const node& n = *e.n;
  switch (f.kind) {
    case json_kind::number:
      if (auto kw = number_violation(n, f.num)) return fail(ei, *kw);
      break;
    case json_kind::string:
      if (auto kw = string_violation(n, f.content, f.code_points)) return fail(ei, *kw);
      break;
    case json_kind::array:
      if (n.flags & f_array) {
        if (f.items < n.min_items) return fail(ei, keyword::min_items);
        if (n.contains != no_node && e.contains < n.min_contains) return fail(ei, keyword::contains, e.contains);
      }
      break;
    case json_kind::object:
      if (n.flags & f_object) {
        if (f.items < n.min_properties) return fail(ei, keyword::min_properties);
        auto seen = [&](std::uint32_t t) { return (bits_[e.bits + t / 64] >> (t % 64)) & 1; };
        // All present (the common case) is one test; else the first missing name in schema order.
        if (n.required.size && (!n.required_fits || (bits_[e.bits] & n.required_mask) != n.required_mask)) {
          for (std::uint32_t j = 0; j < n.required.size; ++j) {
            std::uint32_t t = p_->indices[n.required.begin + j];
            if (!seen(t)) return fail(ei, keyword::required, t);
          }
        }
        for (std::uint32_t j = 0; j < n.dependencies.size; ++j) {
          const dependency& dep = p_->dependencies[n.dependencies.begin + j];
          if (!seen(dep.trigger)) continue;
          for (std::uint32_t k = 0; k < dep.needs.size; ++k) {
            std::uint32_t t = p_->indices[dep.needs.begin + k];
            if (!seen(t)) return fail(ei, keyword::dependent_required, t);
          }
        }
      }
      break;
    default:
      break;
  }
  if (n.flags & f_enum) {
    if (n.has_enum) {
      const value_hash* b = p_->hashes.data() + n.enum_values.begin;
      if (!std::binary_search(b, b + n.enum_values.size, f.hash)) return fail(ei, keyword::enum_);
    }
    if (n.has_const && f.hash != n.const_hash) return fail(ei, keyword::const_);
  }
  if (n.any_of.size && !e.any_pass) return fail(ei, keyword::any_of);
  if (n.one_of.size && e.one_pass != 1) return fail(ei, keyword::one_of, e.one_pass);
}

void evaluator::fail(std::uint32_t ei, keyword kw, std::uint32_t detail) {
  fail_with(ei, failure{kw, evals_[ei].node_idx, evals_[ei].depth, detail});
}

void evaluator::fail(std::uint32_t ei, keyword kw, std::uint32_t detail, std::uint32_t depth) {
  fail_with(ei, failure{kw, evals_[ei].node_idx, depth, detail});
}

void evaluator::fail_with(std::uint32_t ei, const failure& why) {
  eval& e = evals_[ei];
  if (e.state != tri::unknown) return;
  e.state = tri::fail;
  e.why = why;
  if (e.r == role::root) {
    error_.what = validation_error::kind::violation;
    error_.instance_path = path_to(why.depth);
    error_.schema_path = schema_path(why);
    error_.message = describe(why);
    stopped_ = true;
    return;
  }
  notify(e.parent, e, false);
}

void evaluator::pass(std::uint32_t ei) {
  eval& e = evals_[ei];
  e.state = tri::pass;
  if (e.r != role::root) notify(e.parent, e, true);
}

void evaluator::notify(std::uint32_t pi, const eval& child, bool passed) {
  eval& p = evals_[pi];
  if (p.state != tri::unknown) return;
  const node& n = *p.n;
  switch (child.r) {
    case role::root:
    case role::must:
      if (!passed) fail_with(pi, child.why);
      break;
    case role::any_of:
      if (passed) p.any_pass = true;
      else if (++p.any_fail == n.any_of.size) fail(pi, keyword::any_of);
      break;
    case role::one_of:
      if (passed) {
        if (++p.one_pass > 1) fail(pi, keyword::one_of, p.one_pass);
      } else if (++p.one_fail == n.one_of.size) {
        fail(pi, keyword::one_of, 0);
      }
      break;
    case role::not_:
      if (passed) fail(pi, keyword::not_);
      break;
    case role::if_:
    case role::then_:
    case role::else_:
      (child.r == role::if_ ? p.if_state : child.r == role::then_ ? p.then_state : p.else_state) =
          passed ? tri::pass : tri::fail;
      if (p.if_state == tri::pass && p.then_state == tri::fail) fail(pi, keyword::then_);
      else if (p.if_state == tri::fail && p.else_state == tri::fail) fail(pi, keyword::else_);
      break;
    case role::contains:
      if (passed && ++p.contains > n.max_contains) fail(pi, keyword::max_contains, p.contains);
      break;
    case role::prop_name:
      if (!passed) fail(pi, keyword::property_names, 0, child.depth);
      break;
  }
}

void evaluator::limit(std::string message) {
  if (stopped_) return;
  error_ = {validation_error::kind::limit_exceeded, current_path(), "", std::move(message)};
  stopped_ = true;
}

void evaluator::fail_external(validation_error::kind what, std::string message) {
  if (stopped_) return;
  error_ = {what, current_path(), "", std::move(message)};
  stopped_ = true;
}

std::string evaluator::path_to(std::uint32_t depth) const {
  std::string s;
  for (std::uint32_t d = 1; d <= depth && d < frames_.size(); ++d) {
    s += '/';
    s += frames_[d].in_object ? escape_token(frames_[d].key.view()) : std::to_string(frames_[d].index);
  }
  return s;
}

}  // namespace sluice::schema::detail
