// Internal to the evaluator's .cpp files: the stack operations every event uses (a frame per
// value, an evaluation per subschema judging it, the seen-name bitsets), defined here so that each
// file inlines them where it calls them. Same threading and lifetime rules as evaluator.hpp.
#pragma once

#include <algorithm>
#include <limits>
#include <string>

#include "schema/evaluator.hpp"

namespace sluice::schema::detail {

inline constexpr std::uint32_t npos32 = std::numeric_limits<std::uint32_t>::max();

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

}  // namespace sluice::schema::detail
