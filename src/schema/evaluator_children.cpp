// The evaluator opening a container's children: the frame of an array item (and the evaluations
// prefixItems/items/contains add to it), and of an object member (the name looked up in each
// evaluation's property table, propertyNames checked, and what properties/patternProperties/
// additionalProperties add). Same threading and lifetime rules as evaluator.hpp.
#include <string>

#include "schema/evaluator.hpp"
#include "schema/evaluator_stack.hpp"

namespace sluice::schema::detail {
namespace {

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

}  // namespace

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
[[gnu::always_inline]] inline bool evaluator::open_lone_member(frame& f, std::uint32_t d, std::uint32_t i,
                                                                std::uint32_t count, std::string_view k) {
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
  if (!note_member_name(d, count, k, ke ? ke->hash : key_hash(k))) return true;
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

// Notes member `count` (1-based) of the object in frame d, named k with key_hash h (the schema's
// own when a property entry matched, so a named member is not hashed twice). A repeated name is
// decided on the 64-bit hash: distinct names that collide would be refused as a duplicate (a
// retryable upstream_protocol error), which takes names crafted for it.
// Objects are usually small: their names' hashes are scanned until there are this many, then indexed.
constexpr std::size_t scanned_names = 16;

[[gnu::always_inline]] inline bool evaluator::note_member_name(std::uint32_t d, std::uint32_t count,
                                                                std::string_view k, std::uint64_t h) {
  frame& o = frames_[d];
  if (count == 1) {
    o.names.clear();
  } else {
    if (o.names.size() >= scanned_names) [[unlikely]]
      return note_member_name_indexed(d, k, h);
    for (const std::uint64_t x : o.names)
      if (x == h) [[unlikely]] {
          duplicate_member(d, k);
          return false;
        }
  }
  o.names.push_back(h);
  return true;
}

// Past scanned_names, the names are indexed in the frame's `seen` set (moved there once).
[[gnu::noinline]] bool evaluator::note_member_name_indexed(std::uint32_t d, std::string_view k, std::uint64_t h) {
  frame& o = frames_[d];
  if (o.names.size() == scanned_names) {
    o.seen.clear();
    for (const std::uint64_t x : o.names) o.seen.insert(value_hash{x, 0});
    o.names.push_back(0);  // one past scanned_names: the set holds them now
  }
  if (o.seen.size() >= lim_.max_unique_items) {
    limit("more than " + std::to_string(lim_.max_unique_items) + " member names in one object");
    return false;
  }
  if (o.seen.insert(value_hash{h, 0}).second) return true;
  duplicate_member(d, k);
  return false;
}

[[gnu::always_inline]] inline void evaluator::open_member(std::uint32_t d, std::string_view k) {
  const std::uint32_t count = ++frames_[d].items;
  const std::uint32_t begin = frames_[d].evals_begin;
  const auto end = neval_;
  const bool lone = end - begin == 1 && !frames_[d].need_hash;
  if (!push_frame()) return;
  frame& f = frames_[depth_ - 1];  // frames_ does not grow again below
  f.in_object = true;
  if (!lone || !open_lone_member(f, d, begin, count, k)) open_members(d, end, count, k);
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
  if (stopped_) return;
  note_member_name(d, count, k, named ? named->hash : hashed ? h : key_hash(k));
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

}  // namespace sluice::schema::detail
