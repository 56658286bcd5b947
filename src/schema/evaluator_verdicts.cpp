// Deciding evaluations: in-place applicators (allOf, anyOf, oneOf, not, if/then/else, $ref) add
// their subschemas' evaluations beside the one they belong to (spawn_inplace); a finished
// evaluation reports to its parent, whose role decides by its rule (notify); the root's failure,
// an exceeded limit or malformed input stops validation with the verdict. Same threading and
// lifetime rules as evaluator.hpp.
#include <string>

#include "schema/compile_support.hpp"
#include "schema/evaluator.hpp"
#include "schema/evaluator_stack.hpp"

namespace sluice::schema::detail {

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

// The path names the repeated member (the object's path, then the name).
void evaluator::duplicate_member(std::uint32_t d, std::string_view k) {
  if (stopped_) return;
  error_ = {validation_error::kind::duplicate_member, path_to(d) + "/" + escape_token(k), "",
            "a member name appears more than once in one object"};
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
