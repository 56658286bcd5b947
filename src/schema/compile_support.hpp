// Internal helpers for compile(): JSON pointer escaping, the up-front shape check, regexes under
// a budget, the in-place ($ref/allOf/...) graph check and the size estimate. Pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/value.hpp>

#include "core/error.hpp"
#include "schema/program.hpp"
#include "schema/schema.hpp"

namespace sluice::schema::detail {

// RFC 6901 escaping of one reference token ("~" -> "~0", "/" -> "~1").
std::string escape_token(std::string_view token);

// A refusal: errc::bad_request with the JSON pointer of the offending place in `param`.
error refuse(std::string message, const std::string& pointer);

// Splits a URI fragment ("" or "/a/b") into unescaped tokens (percent-decoding first).
std::optional<std::vector<std::string>> parse_fragment_pointer(std::string_view fragment);

// Walks the document once (depth-bounded recursion) so no later pass can be driven past
// max_json_depth or max_json_values; also refuses more than max_enum_values values under `enum`
// members in total (before a large enum is copied, hashed or compiled).
result<void> check_shape(const boost::json::value& schema, const compile_limits& lim);

// Structural hash of a JSON value already bounded by check_shape.
value_hash hash_json(const boost::json::value& v);

format_kind parse_format(std::string_view name);

// Refuses a `pattern` (or patternProperties name) longer than max_pattern_bytes.
result<void> check_pattern_length(std::string_view pattern, const std::string& pointer, const compile_limits& lim);

// Compiles `pattern` with RE2 under the pattern budgets; returns its index in p.regexes.
result<std::uint32_t> compile_regex(std::string_view pattern, const std::string& pointer,
                                    const compile_limits& lim, program& p);

// Refuses cycles of in-place applicators (they never reach a value, so evaluation would never end)
// and nodes whose in-place expansion exceeds max_expansion (exponential $defs fan-out).
result<void> check_in_place_graph(const program& p, const compile_limits& lim);

std::size_t estimate_bytes(const program& p);

template <class T>
span32 append(std::vector<T>& dst, std::vector<T>& src) {
  span32 s{static_cast<std::uint32_t>(dst.size()), static_cast<std::uint32_t>(src.size())};
  for (auto& x : src) dst.push_back(std::move(x));
  return s;
}

}  // namespace sluice::schema::detail
