// The evaluator's value events for scalars: numbers, strings, literals. The scalar fast path
// (lone_eval/close_lone) judges a value whole in one step when exactly one plain evaluation
// judges it; everything else goes through the general begin/end passes in evaluator.cpp. Same
// threading and lifetime rules as evaluator.hpp.
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "schema/evaluator.hpp"
#include "schema/evaluator_stack.hpp"
#include "schema/formats.hpp"

namespace sluice::schema::detail {
namespace {

double as_double(const number_value& v) {
  switch (v.r) {
    case number_value::rep::i64: return static_cast<double>(v.i);
    case number_value::rep::u64: return static_cast<double>(v.u);
    case number_value::rep::f64: return v.d;
  }
  return 0;
}

bool is_integral(const number_value& v) {
  return v.r != number_value::rep::f64 || (std::isfinite(v.d) && std::trunc(v.d) == v.d);
}

bool multiple_of(const number_value& v, double m) {
  // Exact for integers divided by integers; otherwise the quotient must be integral up to the
  // rounding error of one division.
  if (v.r != number_value::rep::f64 && std::trunc(m) == m && m < 9.0e18) {
    auto mi = static_cast<std::uint64_t>(m);
    if (v.r == number_value::rep::u64) return v.u % mi == 0;
    std::uint64_t mag = v.i < 0 ? 0 - static_cast<std::uint64_t>(v.i) : static_cast<std::uint64_t>(v.i);
    return mag % mi == 0;
  }
  double q = as_double(v) / m;
  if (!std::isfinite(q)) return false;
  double tol = std::max(1e-9, std::fabs(q) * 4 * std::numeric_limits<double>::epsilon());
  return std::fabs(q - std::round(q)) <= tol;
}

// Code points in UTF-8 text (the parser has already checked it): every byte that is not a
// continuation byte (10xxxxxx) starts one. Eight bytes at a time.
std::uint32_t count_code_points(std::string_view s) noexcept {
  const char* p = s.data();
  std::size_t n = s.size();
  std::size_t continuation = 0;
  for (; n >= 8; p += 8, n -= 8) {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    // One bit per continuation byte (10xxxxxx), summed by a multiply (no popcnt instruction needed).
    const std::uint64_t c = ((w & ~(w << 1)) & 0x8080808080808080ULL) >> 7;
    continuation += static_cast<std::size_t>((c * 0x0101010101010101ULL) >> 56);
  }
  for (; n > 0; ++p, --n) continuation += (static_cast<unsigned char>(*p) & 0xC0) == 0x80;
  return static_cast<std::uint32_t>(s.size() - continuation);
}

}  // namespace

// The scalar fast path: a value judged by exactly one evaluation with no in-place applicators,
// no enum/const and no container above that hashes it (the common shape of structured outputs:
// a property with a type and a few bounds). Such a value is checked and closed in one step,
// with the same checks, verdicts and messages as the general path; anything else takes that path.
[[gnu::always_inline]] inline evaluator::eval* evaluator::lone_eval(std::uint32_t d, std::uint8_t type_bit) {
  const frame& f = frames_[d];
  if (neval_ - f.evals_begin != 1 || f.is_name) return nullptr;
  eval& e = evals_[f.evals_begin];
  const node& n = *e.n;
  if (e.state != tri::unknown || (n.flags & (f_inplace | f_enum | f_false)) || !(n.types & type_bit) ||
      !(n.any_types & type_bit))
    return nullptr;
  if (d > 0 && (frames_[d - 1].need_hash || frames_[d - 1].track_unique)) return nullptr;
  return &e;
}

// A member value whose one evaluation open_member deferred, when that evaluation is plain (no
// enum/const, not `false`, the type admits the value; what lone_eval asks of a spawned one): its
// node, for the caller to judge the value against without spawning the evaluation. A value that
// passes closes its frame at once (close_deferred); any other outcome spawns the evaluation
// (materialize) and takes the paths below, so verdicts and messages are the general path's.
[[gnu::always_inline]] inline const node* evaluator::deferred_plain(std::uint32_t d, std::uint8_t type_bit) const {
  const std::uint32_t ni = frames_[d].pending;
  if (ni == no_node) return nullptr;
  const node& n = p_->nodes[ni];
  if ((n.flags & (f_enum | f_false)) || !(n.types & type_bit) || !(n.any_types & type_bit)) return nullptr;
  return &n;
}

// Nothing was spawned and a passing `must` child changes nothing: only the frame goes. A member's
// frame is never the root's.
[[gnu::always_inline]] inline bool evaluator::close_deferred() {
  --depth_;
  return true;
}

[[gnu::always_inline]] inline bool evaluator::close_lone(std::uint32_t d, eval& e, std::optional<keyword> violation) {
  frame& f = frames_[d];
  const auto ei = static_cast<std::uint32_t>(&e - evals_.data());
  if (violation) {
    fail(ei, *violation);
  } else {
    e.state = tri::pass;
    if (e.r != role::root && e.r != role::must) notify(e.parent, e, true);
  }
  if (stopped_) return false;
  neval_ = f.evals_begin;
  nbits_ = f.bits_begin;
  --depth_;
  if (d == 0) complete_ = true;
  return true;
}

std::optional<keyword> evaluator::number_violation(const node& n, const number_value& v) {
  if (!(n.flags & (f_numeric | f_integer_only))) return std::nullopt;
  if ((n.flags & f_integer_only) && !is_integral(v)) return keyword::type;
  const double x = as_double(v);
  if (n.has_minimum && x < n.minimum) return keyword::minimum;
  if (n.has_maximum && x > n.maximum) return keyword::maximum;
  if (n.has_xminimum && x <= n.xminimum) return keyword::exclusive_minimum;
  if (n.has_xmaximum && x >= n.xmaximum) return keyword::exclusive_maximum;
  if (n.has_multiple_of && !multiple_of(v, n.multiple_of)) return keyword::multiple_of;
  return std::nullopt;
}

std::optional<keyword> evaluator::string_violation(const node& n, std::string_view content, std::uint32_t code_points) {
  if (!(n.flags & f_string)) return std::nullopt;
  if (code_points < n.min_length) return keyword::min_length;
  if (code_points > n.max_length) return keyword::max_length;
  return content_violation(n, content);
}

// A string seen whole, whose UTF-8 the parser has checked. A code point is 1 to 4 bytes, so when
// the byte count alone puts the length inside [minLength, maxLength] no count can break them and
// none is made (a node with pattern/format only needs none at all).
std::optional<keyword> evaluator::whole_string_violation(const node& n, std::string_view s) {
  if (!(n.flags & f_string)) return std::nullopt;
  const std::size_t bytes = s.size();
  if (bytes > n.max_length || (bytes + 3) / 4 < n.min_length) {
    const std::uint32_t cps = count_code_points(s);
    if (cps < n.min_length) return keyword::min_length;
    if (cps > n.max_length) return keyword::max_length;
  }
  return content_violation(n, s);
}

std::optional<keyword> evaluator::content_violation(const node& n, std::string_view content) {
  if (n.pattern != no_node && !pattern_matches(*p_->regexes[n.pattern], content)) return keyword::pattern;
  if (n.format != format_kind::none && !check_format(n.format, content)) return keyword::format;
  return std::nullopt;
}

bool evaluator::null_value() {
  if (stopped_) return false;
  const std::uint32_t d = value_frame();
  if (d == npos32) return false;
  if (deferred_plain(d, t_null)) return close_deferred();
  if (!materialize(d)) return false;
  if (eval* e = lone_eval(d, t_null)) {
    frames_[d].kind = json_kind::null;
    return close_lone(d, *e, std::nullopt);
  }
  return begin_in(d, json_kind::null) && end_value();
}

bool evaluator::bool_value(bool b) {
  if (stopped_) return false;
  const std::uint32_t d = value_frame();
  if (d == npos32) return false;
  if (deferred_plain(d, t_boolean)) return close_deferred();
  if (!materialize(d)) return false;
  frames_[d].boolean = b;
  if (eval* e = lone_eval(d, t_boolean)) {
    frames_[d].kind = json_kind::boolean;
    return close_lone(d, *e, std::nullopt);
  }
  return begin_in(d, json_kind::boolean) && end_value();
}

bool evaluator::number_begin() { return begin_value(json_kind::number); }

bool evaluator::number_end(number_value v) {
  if (stopped_) return false;
  frames_[depth_ - 1].num = v;
  return end_value();
}

bool evaluator::number_value_whole(number_value v) {
  if (stopped_) return false;
  const std::uint32_t d = value_frame();
  if (d == npos32) return false;
  if (const node* n = deferred_plain(d, t_number | t_integer); n && !number_violation(*n, v)) return close_deferred();
  if (!materialize(d)) return false;
  if (eval* e = lone_eval(d, t_number | t_integer)) {
    frame& f = frames_[d];
    f.kind = json_kind::number;  // for a message about the value
    f.num = v;
    return close_lone(d, *e, number_violation(*e->n, v));
  }
  if (!begin_in(d, json_kind::number)) return false;
  frames_[d].num = v;
  return end_value();
}

bool evaluator::string_whole(std::string_view s) {
  if (stopped_) return false;
  const std::uint32_t d = value_frame();
  if (d == npos32) return false;
  if (const node* n = deferred_plain(d, t_string);
      n && (!(n->flags & f_needs_content) || s.size() <= lim_.max_string_bytes) && !whole_string_violation(*n, s))
    return close_deferred();
  if (!materialize(d)) return false;
  if (eval* e = lone_eval(d, t_string)) {
    const node& n = *e->n;
    // Over the buffering bound, the general path reports the limit as it always does.
    if (!(n.flags & f_needs_content) || s.size() <= lim_.max_string_bytes) {
      frames_[d].kind = json_kind::string;
      return close_lone(d, *e, whole_string_violation(n, s));
    }
  }
  return begin_in(d, json_kind::string) && string_part(s) && string_end();
}

bool evaluator::string_begin() { return begin_value(json_kind::string); }

bool evaluator::string_part(std::string_view s) {
  if (stopped_) return false;
  frame& f = frames_[depth_ - 1];
  if (f.count_chars) f.code_points += count_code_points(s);
  if (f.need_content) {
    if (f.content.size() + s.size() > lim_.max_string_bytes) {
      limit("a string checked by pattern/format is longer than " + std::to_string(lim_.max_string_bytes) + " bytes");
      return false;
    }
    f.content.append(s);
  }
  if (f.need_hash) f.sh.update(s);
  if (f.check_max_length) {
    const auto end = neval_;
    for (std::uint32_t i = f.evals_begin; i < end && !stopped_; ++i)
      if (evals_[i].state == tri::unknown && f.code_points > evals_[i].n->max_length) fail(i, keyword::max_length);
  }
  return !stopped_;
}

bool evaluator::string_end() { return !stopped_ && end_value(); }

}  // namespace sluice::schema::detail
