// Error texts for the evaluator: the failing keyword's schema path and a message a client can
// read. Only runs once per failed validation, off the hot path.
#include <cmath>

#include "schema/compile_support.hpp"
#include "schema/evaluator.hpp"
#include "schema/formats.hpp"

namespace sluice::schema::detail {
namespace {

bool integral(const number_value& v) {
  return v.r != number_value::rep::f64 || (std::isfinite(v.d) && std::trunc(v.d) == v.d);
}

std::string_view kind_name(json_kind k) {
  switch (k) {
    case json_kind::null: return "null";
    case json_kind::boolean: return "boolean";
    case json_kind::number: return "number";
    case json_kind::string: return "string";
    case json_kind::array: return "array";
    case json_kind::object: return "object";
  }
  return "value";
}

std::string types_text(std::uint8_t t) {
  std::string s;
  auto add = [&](std::string_view n) { s += s.empty() ? "" : " or "; s += n; };
  if (t & t_null) add("null");
  if (t & t_boolean) add("boolean");
  if (t & t_number) add("number");
  else if (t & t_integer) add("integer");
  if (t & t_string) add("string");
  if (t & t_array) add("array");
  if (t & t_object) add("object");
  return s.empty() ? "nothing" : s;
}

std::string num(double d) {
  std::string s = std::to_string(d);
  if (std::trunc(d) == d && std::fabs(d) < 1e15) s = std::to_string(static_cast<long long>(d));
  return s;
}

}  // namespace

std::string evaluator::schema_path(const failure& f) const {
  const node& n = p_->nodes[f.node];
  std::string_view kw;
  switch (f.kw) {
    case keyword::false_schema: return std::string(p_->str(n.path));
    case keyword::type: kw = "type"; break;
    case keyword::enum_: kw = "enum"; break;
    case keyword::const_: kw = "const"; break;
    case keyword::minimum: kw = "minimum"; break;
    case keyword::maximum: kw = "maximum"; break;
    case keyword::exclusive_minimum: kw = "exclusiveMinimum"; break;
    case keyword::exclusive_maximum: kw = "exclusiveMaximum"; break;
    case keyword::multiple_of: kw = "multipleOf"; break;
    case keyword::min_length: kw = "minLength"; break;
    case keyword::max_length: kw = "maxLength"; break;
    case keyword::pattern: kw = "pattern"; break;
    case keyword::format: kw = "format"; break;
    case keyword::min_items: kw = "minItems"; break;
    case keyword::max_items: kw = "maxItems"; break;
    case keyword::items:
      // The `false` subschema that refused the item, by its own location: prefixItems/i or items
      // (2020-12), items/i or additionalItems (the array form of drafts 7 and 2019-09).
      return std::string(p_->str(p_->nodes[f.detail < n.prefix_items.size
                                               ? p_->indices[n.prefix_items.begin + f.detail]
                                               : n.items]
                                     .path));
    case keyword::contains: kw = n.min_contains == 1 ? "contains" : "minContains"; break;
    case keyword::min_contains: kw = "minContains"; break;
    case keyword::max_contains: kw = "maxContains"; break;
    case keyword::unique_items: kw = "uniqueItems"; break;
    case keyword::additional_properties: kw = "additionalProperties"; break;
    case keyword::property_names: kw = "propertyNames"; break;
    case keyword::required: kw = "required"; break;
    case keyword::min_properties: kw = "minProperties"; break;
    case keyword::max_properties: kw = "maxProperties"; break;
    case keyword::dependent_required: kw = n.flags & f_dependencies ? "dependencies" : "dependentRequired"; break;
    case keyword::any_of: kw = "anyOf"; break;
    case keyword::one_of: kw = "oneOf"; break;
    case keyword::not_: kw = "not"; break;
    case keyword::then_: kw = "then"; break;
    case keyword::else_: kw = "else"; break;
  }
  return std::string(p_->str(n.path)) + "/" + std::string(kw);
}

std::string evaluator::describe(const failure& f) const {
  const node& n = p_->nodes[f.node];
  const frame& at = frames_[std::min<std::size_t>(f.depth, frames_.size() - 1)];
  auto name = [&](std::uint32_t t) {
    return "\"" + std::string(p_->str(p_->names[n.tracked_names.begin + t])) + "\"";
  };
  switch (f.kw) {
    case keyword::false_schema: return "no value is allowed here (schema is false)";
    case keyword::type: {
      std::string_view got = at.kind == json_kind::number && !integral(at.num) ? "non-integer number" : kind_name(at.kind);
      return "expected " + types_text(n.types) + ", got " + std::string(got);
    }
    case keyword::enum_: return "value is not one of the enum values";
    case keyword::const_: return "value does not equal the const value";
    case keyword::minimum: return "number is less than the minimum " + num(n.minimum);
    case keyword::maximum: return "number is greater than the maximum " + num(n.maximum);
    case keyword::exclusive_minimum: return "number is not greater than " + num(n.xminimum);
    case keyword::exclusive_maximum: return "number is not less than " + num(n.xmaximum);
    case keyword::multiple_of: return "number is not a multiple of " + num(n.multiple_of);
    case keyword::min_length: return "string is shorter than " + std::to_string(n.min_length) + " characters";
    case keyword::max_length: return "string is longer than " + std::to_string(n.max_length) + " characters";
    case keyword::pattern: return "string does not match the pattern " + p_->regexes[n.pattern]->pattern();
    case keyword::format: return "string is not a valid " + std::string(format_name(n.format));
    case keyword::min_items: return "array has fewer than " + std::to_string(n.min_items) + " items";
    case keyword::max_items: return "array has more than " + std::to_string(n.max_items) + " items";
    case keyword::items: return "array item " + std::to_string(f.detail) + " is not allowed";
    case keyword::contains:
    case keyword::min_contains:
      return "array has " + std::to_string(f.detail) + " items matching contains, fewer than " +
             std::to_string(n.min_contains);
    case keyword::max_contains:
      return "array has more than " + std::to_string(n.max_contains) + " items matching contains";
    case keyword::unique_items: return "array item " + std::to_string(f.detail) + " repeats an earlier item";
    case keyword::additional_properties: return "property \"" + at.key.str() + "\" is not allowed";
    case keyword::property_names: return "property name \"" + at.key.str() + "\" does not match propertyNames";
    case keyword::required: return "missing required property " + name(f.detail);
    case keyword::min_properties: return "object has fewer than " + std::to_string(n.min_properties) + " properties";
    case keyword::max_properties: return "object has more than " + std::to_string(n.max_properties) + " properties";
    case keyword::dependent_required:
      return "missing property " + name(f.detail) + " required by " +
             (n.flags & f_dependencies ? "dependencies" : "dependentRequired");
    case keyword::any_of: return "value matches none of the anyOf subschemas";
    case keyword::one_of:
      return f.detail == 0 ? "value matches none of the oneOf subschemas"
                           : "value matches more than one oneOf subschema";
    case keyword::not_: return "value matches the schema in not";
    case keyword::then_: return "value matches if but not then";
    case keyword::else_: return "value matches neither if nor else";
  }
  return "invalid value";
}

}  // namespace sluice::schema::detail
