// What each keyword sets in a compiled node, by family: assertions on the value itself, keywords
// whose value is a subschema (or a list of them), and keywords naming object members. Part of the
// compiler (compiler.hpp); every count is checked against compile_limits before the work it guards.
#include <algorithm>
#include <cmath>

#include "schema/compile_support.hpp"
#include "schema/compiler.hpp"

namespace sluice::schema::detail {

namespace json = boost::json;

// Keywords whose meaning is their dialect's own: drafts 7 and 2019-09's additionalItems, draft 7's
// dependencies. False when k is none of them (or not a keyword of this dialect).
result<bool> compiler::dialect_keyword(node& n, std::string_view k, const json::value& val, const std::string& kp,
                                       std::size_t depth, bool tuple_items, member_names& names) {
  if (k == "additionalItems" && dialect_ != dialect::draft2020_12) {
    // The items after an array-form `items`. Beside a schema-form `items`, or none, it has no
    // effect; it is compiled all the same, so it is held to what every unused subschema is.
    auto r = compile_schema(val, kp, depth + 1);
    if (!r) return std::move(r).err();
    if (tuple_items) n.items = *r, n.flags |= f_array;
  } else if (k == "dependencies" && dialect_ == dialect::draft7) {
    // Draft 7's dependencies: an array of names is 2019-09's dependentRequired; a schema is its
    // dependentSchemas, which sluice does not assert.
    if (!val.is_object()) return refuse("dependencies must be an object", kp);
    for (const auto& d : val.get_object()) {
      std::string dp = kp + "/" + escape_token(d.key());
      if (d.value().is_array()) {
        auto r = parse_names(d.value(), dp);
        if (!r) return std::move(r).err();
        names.dependent.emplace_back(std::string(d.key()), std::move(*r));
      } else if (check_only_) {  // applies in place; compiled so its structure and refs are checked
        auto r = compile_schema(d.value(), dp, depth);
        if (!r) return std::move(r).err();
        names.unmatched_in_place.push_back(*r);
      } else {
        return refuse("dependencies with a schema (draft 2019-09's dependentSchemas) is not supported; "
                      "only arrays of property names",
                      dp);
      }
    }
    n.flags |= f_object | f_dependencies;
  } else {
    return false;
  }
  return true;
}

// Keywords that assert something of the value itself: type, enum/const, numeric bounds, lengths
// and counts, pattern, format, uniqueItems. False when k is none of them.
result<bool> compiler::assertion_keyword(node& n, std::string_view k, const json::value& val, const std::string& kp,
                                         bool has_contains) {
  auto known = value_keyword(n, k, val, kp);
  if (known && !*known) known = bound_keyword(n, k, val, kp, has_contains);
  if (known && !*known) known = string_keyword(n, k, val, kp);
  return known;
}

// type, enum, const and uniqueItems. False when k is none of them.
result<bool> compiler::value_keyword(node& n, std::string_view k, const json::value& val, const std::string& kp) {
  if (k == "type") {
    auto r = parse_type(val, kp);
    if (!r) return std::move(r).err();
    n.types = *r;
  } else if (k == "enum") {
    if (!val.is_array()) return refuse("enum must be an array", kp);
    enum_values_ += val.get_array().size();
    if (enum_values_ > lim_.max_enum_values)
      return refuse("schema has more than " + std::to_string(lim_.max_enum_values) + " enum values", kp);
    std::vector<value_hash> hs;
    std::size_t i = 0;
    for (const auto& e : val.get_array()) {
      if (add_chars(string_chars(e))) return too_many_chars(kp + "/" + std::to_string(i));
      ++i;
      hs.push_back(hash_json(e));
    }
    std::sort(hs.begin(), hs.end());
    n.enum_values = append(p_.hashes, hs);
    n.has_enum = true;
    n.flags |= f_enum;
  } else if (k == "const") {
    if (add_chars(string_chars(val))) return too_many_chars(kp);
    n.has_const = true;
    n.const_hash = hash_json(val);
    n.flags |= f_enum;
  } else if (k == "uniqueItems") {
    if (!val.is_bool()) return refuse("uniqueItems must be a boolean", kp);
    if (val.get_bool()) n.flags |= f_array | f_unique;
  } else {
    return false;
  }
  return true;
}

// Numeric bounds (minimum ... multipleOf) and the counts of lengths, items, contains and
// properties. False when k is none of them.
result<bool> compiler::bound_keyword(node& n, std::string_view k, const json::value& val, const std::string& kp,
                                     bool has_contains) {
  if (k == "minimum" || k == "maximum" || k == "exclusiveMinimum" || k == "exclusiveMaximum" || k == "multipleOf") {
    if (!val.is_number()) return refuse(std::string(k) + " must be a number", kp);
    double d = val.to_number<double>();
    n.flags |= f_numeric;
    if (k == "minimum") n.has_minimum = true, n.minimum = d;
    else if (k == "maximum") n.has_maximum = true, n.maximum = d;
    else if (k == "exclusiveMinimum") n.has_xminimum = true, n.xminimum = d;
    else if (k == "exclusiveMaximum") n.has_xmaximum = true, n.xmaximum = d;
    else {
      if (!(d > 0)) return refuse("multipleOf must be greater than 0", kp);
      n.has_multiple_of = true, n.multiple_of = d;
    }
  } else if (k == "minLength" || k == "maxLength" || k == "minItems" || k == "maxItems" ||
             k == "minContains" || k == "maxContains" || k == "minProperties" || k == "maxProperties") {
    auto r = parse_count(val, kp);
    if (!r) return std::move(r).err();
    std::uint32_t c = *r;
    if (k == "minLength") n.min_length = c, n.flags |= f_string;
    else if (k == "maxLength") n.max_length = c, n.flags |= f_string | f_max_length;
    else if (k == "minItems") n.min_items = c, n.flags |= f_array;
    else if (k == "maxItems") n.max_items = c, n.flags |= f_array;
    else if (k == "minContains") { if (has_contains) n.min_contains = c; }
    else if (k == "maxContains") { if (has_contains) n.max_contains = c; }
    else if (k == "minProperties") n.min_properties = c, n.flags |= f_object;
    else n.max_properties = c, n.flags |= f_object;
  } else {
    return false;
  }
  return true;
}

// pattern and format. False when k is neither.
result<bool> compiler::string_keyword(node& n, std::string_view k, const json::value& val, const std::string& kp) {
  if (k == "pattern") {
    if (!val.is_string()) return refuse("pattern must be a string", kp);
    if (check_only_) {  // nothing is matched against it: only its size is bounded, no regex is built
      if (auto c = check_pattern_length(val.get_string(), kp, lim_); !c) return std::move(c).err();
      return true;
    }
    auto r = compile_regex(val.get_string(), kp, lim_, p_);
    if (!r) return std::move(r).err();
    n.pattern = *r;
    n.flags |= f_string | f_needs_content;
  } else if (k == "format") {
    if (!val.is_string()) return refuse("format must be a string", kp);
    auto f = parse_format(val.get_string());
    if (f == format_kind::none && check_only_) return true;  // an annotation where nothing is validated
    if (f == format_kind::none)
      return refuse("unsupported format \"" + std::string(val.get_string()) + "\"", kp);
    n.format = f;
    n.flags |= f_string | f_needs_content;
  } else {
    return false;
  }
  return true;
}

// Keywords whose value is a subschema or a list of them: items, prefixItems, contains,
// additionalProperties, propertyNames and the in-place applicators. False when k is none of them.
result<bool> compiler::subschema_keyword(node& n, std::string_view k, const json::value& val, const std::string& kp,
                                         std::size_t child_depth) {
  // The array form of items is prefixItems by another name in drafts 7 and 2019-09 (their
  // additionalItems: dialect_keyword). In 2020-12 it is no schema at all: read as prefixItems where
  // nothing is validated, refused where the difference would be silently lost.
  const bool tuple_items = k == "items" && val.is_array();
  if (tuple_items && !check_only_ && dialect_ == dialect::draft2020_12)
    return refuse("array-form items is drafts 7 and 2019-09 (say so in $schema); draft 2020-12 has prefixItems", kp);
  if (!tuple_items && (k == "items" || k == "contains" || k == "additionalProperties" || k == "propertyNames" ||
                       k == "not" || k == "if" || k == "then" || k == "else")) {
    auto r = compile_schema(val, kp, child_depth);
    if (!r) return std::move(r).err();
    std::uint32_t c = *r;
    if (k == "items") n.items = c, n.flags |= f_array;
    else if (k == "contains") n.contains = c, n.flags |= f_array;
    else if (k == "additionalProperties") n.additional = c, n.flags |= f_object;
    else if (k == "propertyNames") n.property_names = c, n.flags |= f_object;
    else if (k == "not") n.not_ = c, n.flags |= f_inplace;
    else if (k == "if") n.if_ = c;
    else if (k == "then") n.then_ = c;
    else n.else_ = c;
  } else if (tuple_items || k == "prefixItems" || k == "allOf" || k == "anyOf" || k == "oneOf") {
    if (!val.is_array() || val.get_array().empty())
      return refuse(std::string(k) + " must be a non-empty array of schemas", kp);
    std::vector<std::uint32_t> kids;
    std::size_t i = 0;
    for (const auto& s : val.get_array()) {
      auto r = compile_schema(s, kp + "/" + std::to_string(i++), child_depth);
      if (!r) return std::move(r).err();
      kids.push_back(*r);
    }
    span32 sp = append(p_.indices, kids);
    if (tuple_items || k == "prefixItems") n.prefix_items = sp, n.flags |= f_array;
    else if (k == "allOf") n.all_of = sp, n.flags |= f_inplace;
    else if (k == "anyOf") n.any_of = sp, n.flags |= f_inplace;
    else n.one_of = sp, n.flags |= f_inplace;
  } else {
    return false;
  }
  return true;
}

// Keywords naming object members: properties, patternProperties, required, dependentRequired. The
// names are collected for the key table (compile_key_table.cpp). False when k is none of them.
result<bool> compiler::object_keyword(node& n, std::string_view k, const json::value& val, const std::string& kp,
                                      std::size_t child_depth, member_names& names) {
  if (k == "properties" || k == "patternProperties") {
    if (!val.is_object()) return refuse(std::string(k) + " must be an object", kp);
    for (const auto& pr : val.get_object()) {
      std::string pp = kp + "/" + escape_token(pr.key());
      if (k == "properties" && ++properties_ > lim_.max_properties)
        return refuse("schema has more than " + std::to_string(lim_.max_properties) + " properties", pp);
      if (k == "properties" && add_chars(code_points(pr.key()))) return too_many_chars(pp);
      auto r = compile_schema(pr.value(), pp, child_depth);
      if (!r) return std::move(r).err();
      if (k == "properties") {
        names.properties.emplace_back(std::string(pr.key()), *r);
      } else if (check_only_) {
        if (auto c = check_pattern_length(pr.key(), pp, lim_); !c) return std::move(c).err();
        names.unmatched.push_back(*r);
      } else {
        auto re = compile_regex(pr.key(), pp, lim_, p_);
        if (!re) return std::move(re).err();
        p_.patterns.push_back({*re, *r});
      }
    }
    if (k == "patternProperties" && !check_only_) {
      auto count = static_cast<std::uint32_t>(val.get_object().size());
      n.pattern_props = {static_cast<std::uint32_t>(p_.patterns.size()) - count, count};
    }
    n.flags |= f_object;
  } else if (k == "required") {
    auto r = parse_names(val, kp);
    if (!r) return std::move(r).err();
    names.required = std::move(*r);
    n.flags |= f_object;
  } else if (k == "dependentRequired") {
    if (!val.is_object()) return refuse("dependentRequired must be an object", kp);
    for (const auto& d : val.get_object()) {
      auto r = parse_names(d.value(), kp + "/" + escape_token(d.key()));
      if (!r) return std::move(r).err();
      names.dependent.emplace_back(std::string(d.key()), std::move(*r));
    }
    n.flags |= f_object;
  } else {
    return false;
  }
  return true;
}

result<std::uint8_t> compiler::parse_type(const json::value& v, const std::string& path) {
  auto one = [](std::string_view s) -> std::uint8_t {
    if (s == "null") return t_null;
    if (s == "boolean") return t_boolean;
    if (s == "integer") return t_integer;
    if (s == "number") return t_number | t_integer;
    if (s == "string") return t_string;
    if (s == "array") return t_array;
    if (s == "object") return t_object;
    return 0;
  };
  if (v.is_string()) {
    std::uint8_t t = one(v.get_string());
    if (!t) return refuse("unknown type \"" + std::string(v.get_string()) + "\"", path);
    return t;
  }
  if (!v.is_array()) return refuse("type must be a string or an array of strings", path);
  std::uint8_t mask = 0;
  for (const auto& e : v.get_array()) {
    std::uint8_t t = e.is_string() ? one(e.get_string()) : 0;
    if (!t) return refuse("type must name JSON types", path);
    mask |= t;
  }
  return mask;
}

result<std::uint32_t> compiler::parse_count(const json::value& v, const std::string& path) {
  if (v.is_int64() && v.get_int64() >= 0) return clamp32(static_cast<std::uint64_t>(v.get_int64()));
  if (v.is_uint64()) return clamp32(v.get_uint64());
  if (v.is_double() && v.get_double() >= 0 && std::trunc(v.get_double()) == v.get_double())
    return v.get_double() >= 4294967295.0 ? unbounded : static_cast<std::uint32_t>(v.get_double());
  return refuse("must be a non-negative integer", path);
}

std::uint32_t compiler::clamp32(std::uint64_t x) {
  return x >= unbounded ? unbounded : static_cast<std::uint32_t>(x);
}

result<std::vector<std::string>> compiler::parse_names(const json::value& v, const std::string& path) {
  if (!v.is_array()) return refuse("must be an array of strings", path);
  std::vector<std::string> out;
  for (const auto& e : v.get_array()) {
    if (!e.is_string()) return refuse("must be an array of strings", path);
    out.emplace_back(e.get_string());
  }
  if (out.size() > lim_.max_properties)
    return refuse("schema has more than " + std::to_string(lim_.max_properties) + " properties", path);
  return out;
}

}  // namespace sluice::schema::detail
