// The evaluation engine. Evaluations ("this subschema against this value") live in one stack
// (evals_), grouped by the value they judge (frames_). Applicators that judge the same value
// (allOf, anyOf, $ref, ...) add sibling evaluations in the same frame; applicators that judge a
// member or item add evaluations in the next frame. A finished evaluation reports to its parent,
// whose role-specific rule (must pass, any of, one of, not, if/then/else, contains) decides at once
// whenever it can, so failures surface at the first token that makes them certain.
// This file: a value's life in its frame (first token: type checks and what to collect; end: the
// final checks, innermost evaluations first). Elsewhere: opening array items and object members
// (evaluator_children.cpp), scalar values and their one-step fast path (evaluator_scalar.cpp),
// applicator rules and verdicts (evaluator_verdicts.cpp), messages (evaluator_messages.cpp).
#include "schema/evaluator.hpp"

#include <algorithm>

#include "schema/evaluator_stack.hpp"

namespace sluice::schema::detail {
namespace {

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

}  // namespace sluice::schema::detail
