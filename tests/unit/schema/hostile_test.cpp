// Hostile schemas and instances: each is refused (or stopped at a validate_limits bound) with an
// error that names the place, and quickly.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "test_util.hpp"

using namespace sluice::schema;
namespace json = boost::json;

namespace {

// Compiles `schema` expecting a refusal; returns the error. The time bound is not a speed target
// (those live in bench/schema_bench): it only catches a refusal that comes after work growing
// with the hostile input (seconds to forever) rather than at the limit (microseconds to a few
// milliseconds; a few hundred under ASan on a loaded 2-core CI machine).
sluice::error refused(const json::value& schema, const compile_limits& lim = {}) {
  auto t0 = std::chrono::steady_clock::now();
  auto r = compile(schema, lim);
  auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_LT(took, std::chrono::seconds(3));
  EXPECT_FALSE(r.has_value());
  if (r) return {};
  EXPECT_EQ(r.err().code, sluice::errc::bad_request);
  return r.err();
}

bool contains(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }

json::value nested_arrays(int depth) {
  json::value v = json::array{};
  for (int i = 0; i < depth; ++i) {
    json::array outer;
    outer.push_back(std::move(v));
    v = std::move(outer);
  }
  return v;
}

}  // namespace

TEST(schema_hostile, self_ref_cycle) {
  auto e = refused(json::parse(R"({"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"})"));
  EXPECT_TRUE(contains(e.message, "cycle")) << e.message;
  EXPECT_EQ(e.param, "/$defs/a");
}

TEST(schema_hostile, indirect_cycles) {
  EXPECT_TRUE(contains(refused(json::parse(R"({"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"allOf":[{"$ref":"#/$defs/a"}]}},
                                              "$ref":"#/$defs/a"})")).message,
                       "cycle"));
  EXPECT_TRUE(contains(refused(json::parse(R"({"anyOf":[{"type":"null"},{"$ref":"#"}]})")).message, "cycle"));
  EXPECT_TRUE(contains(refused(json::parse(R"({"if":{"$ref":"#"},"then":true})")).message, "cycle"));
  // A recursion that descends into the instance is fine: it ends with the document.
  EXPECT_TRUE(compile(json::parse(R"({"items":{"$ref":"#"}})")));
}

TEST(schema_hostile, exponential_fan_out) {
  json::object defs;
  for (int i = 0; i < 40; ++i) {
    std::string next = "#/$defs/d" + std::to_string(i + 1);
    defs["d" + std::to_string(i)] = json::parse(R"({"allOf":[{"$ref":")" + next + R"("},{"$ref":")" + next + R"("}]})");
  }
  defs["d40"] = json::parse(R"({"type":"integer"})");
  json::object root{{"$defs", defs}, {"$ref", "#/$defs/d0"}};
  auto e = refused(root);
  EXPECT_TRUE(contains(e.message, "expands")) << e.message;
}

TEST(schema_hostile, nesting_deeper_than_ten_levels) {
  auto nest = [](int levels) {
    json::value v = json::parse(R"({"type":"string"})");
    for (int i = 0; i < levels; ++i) v = json::object{{"type", "object"}, {"properties", json::object{{"x", v}}}};
    return v;
  };
  EXPECT_TRUE(compile(nest(10)));
  auto e = refused(nest(11));
  EXPECT_TRUE(contains(e.message, "deeper than 10")) << e.message;
  EXPECT_EQ(e.param, "/properties/x/properties/x/properties/x/properties/x/properties/x/properties/x/properties/x/"
                     "properties/x/properties/x/properties/x/properties/x");
  // Raw JSON depth is bounded before any recursive pass runs over the document.
  json::object deep_enum;
  deep_enum["enum"] = nested_arrays(1000);
  EXPECT_TRUE(contains(refused(deep_enum).message, "JSON levels"));
}

TEST(schema_hostile, too_many_properties) {
  auto make = [](int n) {
    json::object props;
    for (int i = 0; i < n; ++i) props["p" + std::to_string(i)] = json::object{{"type", "integer"}};
    return json::value(json::object{{"type", "object"}, {"properties", props}});
  };
  EXPECT_TRUE(compile(make(5000)));
  EXPECT_TRUE(contains(refused(make(5001)).message, "5000 properties"));
}

TEST(schema_hostile, too_many_enum_values) {
  auto make = [](int n) {
    json::array values;
    for (int i = 0; i < n; ++i) values.push_back(i);
    return json::value(json::object{{"enum", values}});
  };
  EXPECT_TRUE(compile(make(1000)));
  auto e = refused(make(1001));
  EXPECT_TRUE(contains(e.message, "1000 enum values"));
  EXPECT_EQ(e.param, "/enum");
}

TEST(schema_hostile, pathological_patterns) {
  // Backreferences and lookaround need backtracking; RE2 refuses them.
  EXPECT_EQ(refused(json::parse(R"({"pattern":"^(a+)\\1$"})")).param, "/pattern");
  refused(json::parse(R"({"pattern":"(?=a)b"})"));
  refused(json::parse(R"({"properties":{"a":{"pattern":"(unclosed"}}})"));
  // Huge counted repetition: over RE2's limits or the program budget.
  auto e = refused(json::parse(R"({"pattern":"((a{100}){100}){100}"})"));
  EXPECT_EQ(e.param, "/pattern");
  auto big = refused(json::parse(R"({"patternProperties":{"[a-z]{1000}[0-9]{1000}[A-Z]{1000}[a-f]{1000}[g-k]{1000}":true}})"));
  EXPECT_TRUE(contains(big.message, "instructions") || contains(big.message, "regex")) << big.message;
  // The classic catastrophic-backtracking pattern is harmless in RE2: accepted and linear.
  auto s = compile(json::parse(R"({"pattern":"^(a+)+$"})"));
  ASSERT_TRUE(s);
  std::string text = "\"" + std::string(50000, 'a') + "!\"";
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE((*s)->validate_text(text));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3)) << "linear, not exponential (2^50000 would never end)";
}

TEST(schema_hostile, compile_limits_are_configurable) {
  compile_limits lim;
  lim.max_nodes = 3;
  EXPECT_TRUE(contains(refused(json::parse(R"({"allOf":[{},{},{}]})"), lim).message, "subschemas"));
  lim = {};
  lim.max_json_values = 10;
  EXPECT_TRUE(contains(refused(json::parse(R"({"enum":[1,2,3,4,5,6,7,8,9,10]})"), lim).message, "JSON values"));
}

TEST(schema_hostile, runtime_fan_out_is_bounded) {
  // Each level doubles the live evaluations; validate_limits stops it instead of exploding.
  auto s = compile(json::parse(R"({"$defs":{"n":{"anyOf":[{"items":{"$ref":"#/$defs/n"}},
                                  {"items":{"$ref":"#/$defs/n"}}]}},"$ref":"#/$defs/n"})"));
  ASSERT_TRUE(s);
  std::string doc = std::string(60, '[') + std::string(60, ']');
  auto t0 = std::chrono::steady_clock::now();
  auto v = (*s)->validate_text(doc);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3)) << "stopped at the limit, not after 2^60 evaluations";
  ASSERT_TRUE(v);
  EXPECT_EQ(v->what, validation_error::kind::limit_exceeded);
}

TEST(schema_hostile, instance_depth_is_bounded) {
  auto s = compile(json::parse(R"({"items":{"$ref":"#"}})"));
  ASSERT_TRUE(s);
  validate_limits lim;
  lim.max_depth = 50;
  EXPECT_FALSE((*s)->validate_text(std::string(49, '[') + std::string(49, ']'), lim));
  auto v = (*s)->validate_text(std::string(10000, '[') + std::string(10000, ']'), lim);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->what, validation_error::kind::limit_exceeded);
  auto d = (*s)->validate(nested_arrays(1000), lim);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->what, validation_error::kind::limit_exceeded);
}
