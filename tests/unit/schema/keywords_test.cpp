// One test per supported keyword (valid and invalid instances, and the reported paths), run
// through DOM, text and stream validation by schema_test::check.
#include <gtest/gtest.h>

#include "test_util.hpp"

using namespace sluice::schema;
using schema_test::check;
using schema_test::must_compile;
using schema_test::valid;

TEST(schema_keywords, type) {
  EXPECT_TRUE(valid(R"({"type":"integer"})", "3"));
  EXPECT_TRUE(valid(R"({"type":"integer"})", "3.0"));
  EXPECT_FALSE(valid(R"({"type":"integer"})", "3.5"));
  EXPECT_FALSE(valid(R"({"type":"integer"})", R"("3")"));
  EXPECT_TRUE(valid(R"({"type":["string","null"]})", "null"));
  EXPECT_FALSE(valid(R"({"type":["string","null"]})", "false"));
  auto s = must_compile(R"({"type":"object","properties":{"a":{"type":"array","items":{"type":"number"}}}})");
  auto v = check(s, R"({"a":[1,2,"x"]})");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->instance_path, "/a/2");
  EXPECT_EQ(v->schema_path, "/properties/a/items/type");
  EXPECT_EQ(v->message, "expected number, got string");
}

TEST(schema_keywords, properties_required_additional) {
  const char* s = R"({"type":"object","properties":{"a":{"type":"string"},"b":{}},"required":["a"],
                     "additionalProperties":false})";
  EXPECT_TRUE(valid(s, R"({"a":"x","b":[1]})"));
  auto c = must_compile(s);
  auto v = check(c, R"({"b":1})");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->instance_path, "");
  EXPECT_EQ(v->schema_path, "/required");
  EXPECT_EQ(v->message, "missing required property \"a\"");
  v = check(c, R"({"a":"x","c~/":1})");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->instance_path, "/c~0~1");
  EXPECT_EQ(v->schema_path, "/additionalProperties");
  EXPECT_FALSE(valid(R"({"additionalProperties":{"type":"integer"}})", R"({"x":1,"y":"2"})"));
}

TEST(schema_keywords, pattern_properties_and_property_names) {
  const char* s = R"({"patternProperties":{"^x-":{"type":"integer"}},"additionalProperties":{"type":"string"}})";
  EXPECT_TRUE(valid(s, R"({"x-a":1,"b":"s"})"));
  EXPECT_FALSE(valid(s, R"({"x-a":"1"})"));
  EXPECT_FALSE(valid(s, R"({"b":1})"));
  const char* n = R"({"propertyNames":{"maxLength":3,"pattern":"^[a-z]+$"}})";
  EXPECT_TRUE(valid(n, R"({"abc":1})"));
  auto c = must_compile(n);
  auto v = check(c, R"({"abcd":1})");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->instance_path, "/abcd");
  EXPECT_EQ(v->schema_path, "/propertyNames");
  EXPECT_FALSE(valid(n, R"({"A":1})"));
}

TEST(schema_keywords, items_prefix_items_contains) {
  const char* s = R"({"prefixItems":[{"type":"string"},{"type":"integer"}],"items":false})";
  EXPECT_TRUE(valid(s, R"(["a",1])"));
  EXPECT_TRUE(valid(s, R"(["a"])"));
  auto c = must_compile(s);
  auto v = check(c, R"(["a",1,2])");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->instance_path, "/2");
  EXPECT_EQ(v->schema_path, "/items");
  EXPECT_FALSE(valid(s, R"([1])"));
  const char* ct = R"({"contains":{"const":7},"minContains":2,"maxContains":3})";
  EXPECT_FALSE(valid(ct, "[7,1]"));
  EXPECT_TRUE(valid(ct, "[7,7,1]"));
  EXPECT_FALSE(valid(ct, "[7,7,7,7]"));
  EXPECT_TRUE(valid(R"({"contains":{"type":"null"},"minContains":0})", "[]"));
}

TEST(schema_keywords, enum_and_const) {
  const char* e = R"({"enum":["red",1,{"a":[1,2]},null]})";
  EXPECT_TRUE(valid(e, R"("red")"));
  EXPECT_TRUE(valid(e, "1.0"));
  EXPECT_TRUE(valid(e, R"({"a":[1,2.0]})"));
  EXPECT_FALSE(valid(e, R"({"a":[2,1]})"));
  EXPECT_FALSE(valid(e, R"("blue")"));
  EXPECT_FALSE(valid(e, "true"));
  EXPECT_TRUE(valid(R"({"const":{"x":1,"y":2}})", R"({"y":2,"x":1})"));
  EXPECT_FALSE(valid(R"({"const":false})", "0"));
}

TEST(schema_keywords, combinators) {
  const char* any = R"({"anyOf":[{"type":"string"},{"type":"null"}]})";
  EXPECT_TRUE(valid(any, "null"));
  EXPECT_FALSE(valid(any, "1"));
  const char* one = R"({"oneOf":[{"type":"integer"},{"minimum":2}]})";
  EXPECT_TRUE(valid(one, "1"));
  EXPECT_TRUE(valid(one, "2.5"));
  EXPECT_FALSE(valid(one, "3"));
  EXPECT_FALSE(valid(R"({"allOf":[{"minimum":1},{"maximum":2}]})", "3"));
  EXPECT_FALSE(valid(R"({"not":{"type":"string"}})", R"("s")"));
  EXPECT_TRUE(valid(R"({"not":{"type":"string"}})", "[]"));
  const char* ite = R"({"if":{"properties":{"kind":{"const":"a"}}},"then":{"required":["x"]},"else":{"required":["y"]}})";
  EXPECT_TRUE(valid(ite, R"({"kind":"a","x":1})"));
  EXPECT_FALSE(valid(ite, R"({"kind":"a","y":1})"));
  EXPECT_TRUE(valid(ite, R"({"kind":"b","y":1})"));
  EXPECT_FALSE(valid(ite, R"({"kind":"b","x":1})"));
}

TEST(schema_keywords, refs_and_defs) {
  const char* tree = R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},
      "kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"]}},"$ref":"#/$defs/node"})";
  EXPECT_TRUE(valid(tree, R"({"v":1,"kids":[{"v":2,"kids":[{"v":3}]}]})"));
  auto c = must_compile(tree);
  auto v = check(c, R"({"v":1,"kids":[{"v":2,"kids":[{"v":"3"}]}]})");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->instance_path, "/kids/0/kids/0/v");
  EXPECT_EQ(v->schema_path, "/$defs/node/properties/v/type");
  EXPECT_TRUE(valid(R"({"properties":{"self":{"$ref":"#"}},"additionalProperties":false})", R"({"self":{"self":{}}})"));
  EXPECT_FALSE(valid(R"({"properties":{"self":{"$ref":"#"}},"additionalProperties":false})", R"({"self":{"x":1}})"));
}

TEST(schema_keywords, numbers) {
  EXPECT_FALSE(valid(R"({"minimum":2})", "1.5"));
  EXPECT_TRUE(valid(R"({"minimum":2})", "2"));
  EXPECT_FALSE(valid(R"({"exclusiveMinimum":2})", "2"));
  EXPECT_FALSE(valid(R"({"maximum":2})", "2.1"));
  EXPECT_FALSE(valid(R"({"exclusiveMaximum":2})", "2"));
  EXPECT_TRUE(valid(R"({"multipleOf":0.01})", "19.99"));
  EXPECT_FALSE(valid(R"({"multipleOf":3})", "10"));
  EXPECT_TRUE(valid(R"({"multipleOf":3})", "-9"));
}

TEST(schema_keywords, strings) {
  EXPECT_TRUE(valid(R"({"maxLength":2})", "\"\xF0\x9F\x98\x80\xC3\xA9\""));  // two code points, six bytes
  EXPECT_FALSE(valid(R"({"minLength":3})", "\"\xF0\x9F\x98\x80\xC3\xA9\""));
  EXPECT_TRUE(valid(R"({"pattern":"^[a-z]+-\\d{2}$"})", R"("abc-12")"));
  EXPECT_FALSE(valid(R"({"pattern":"^[a-z]+-\\d{2}$"})", R"("abc-123")"));
  EXPECT_TRUE(valid(R"({"pattern":"b"})", R"("abc")"));  // not anchored
}

TEST(schema_keywords, formats) {
  EXPECT_TRUE(valid(R"({"format":"date-time"})", R"("2024-02-29T12:00:00.5+01:00")"));
  EXPECT_FALSE(valid(R"({"format":"date-time"})", R"("2023-02-29T12:00:00Z")"));
  EXPECT_TRUE(valid(R"({"format":"date"})", R"("2024-12-31")"));
  EXPECT_FALSE(valid(R"({"format":"time"})", R"("25:00:00Z")"));
  EXPECT_TRUE(valid(R"({"format":"email"})", R"("a.b@example.com")"));
  EXPECT_FALSE(valid(R"({"format":"email"})", R"("a..b@example.com")"));
  EXPECT_TRUE(valid(R"({"format":"uuid"})", R"("123e4567-e89b-12d3-a456-426614174000")"));
  EXPECT_FALSE(valid(R"({"format":"ipv4"})", R"("1.2.3.256")"));
  EXPECT_TRUE(valid(R"({"format":"ipv6"})", R"("2001:db8::1")"));
  EXPECT_FALSE(valid(R"({"format":"hostname"})", R"("-bad.example")"));
  EXPECT_TRUE(valid(R"({"format":"uri"})", R"("https://example.com/a?b=c#d")"));
  EXPECT_FALSE(valid(R"({"format":"uri"})", R"("/relative")"));
  EXPECT_TRUE(valid(R"({"format":"email"})", "12"));  // formats apply to strings only
}

TEST(schema_keywords, array_and_object_sizes) {
  EXPECT_FALSE(valid(R"({"minItems":2})", "[1]"));
  EXPECT_FALSE(valid(R"({"maxItems":1})", "[1,2]"));
  EXPECT_FALSE(valid(R"({"uniqueItems":true})", R"([{"a":1,"b":2},{"b":2,"a":1.0}])"));
  EXPECT_TRUE(valid(R"({"uniqueItems":true})", R"([1,"1",[1],{"1":1}])"));
  EXPECT_FALSE(valid(R"({"minProperties":2})", R"({"a":1})"));
  EXPECT_FALSE(valid(R"({"maxProperties":1})", R"({"a":1,"b":2})"));
  const char* dep = R"({"dependentRequired":{"card":["billing"]}})";
  EXPECT_TRUE(valid(dep, R"({"billing":1})"));
  EXPECT_FALSE(valid(dep, R"({"card":1})"));
  EXPECT_TRUE(valid(dep, R"({"card":1,"billing":2})"));
}

TEST(schema_keywords, annotations_are_accepted) {
  EXPECT_TRUE(valid(R"({"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"https://x.test/s",
      "title":"t","description":"d","default":1,"examples":[1],"$comment":"c","deprecated":false,
      "readOnly":true,"writeOnly":false,"type":"integer"})",
                    "1"));
}

TEST(schema_keywords, unsupported_keywords_are_refused_with_their_path) {
  auto r = compile(boost::json::parse(R"({"properties":{"a":{"unevaluatedProperties":false}}})"));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.err().code, sluice::errc::bad_request);
  EXPECT_EQ(r.err().param, "/properties/a/unevaluatedProperties");
  EXPECT_NE(r.err().message.find("unevaluatedProperties"), std::string::npos);
  for (const char* s : {R"({"$anchor":"x"})", R"({"$dynamicRef":"#x"})", R"({"dependentSchemas":{}})",
                        R"({"format":"duration"})", R"({"$ref":"https://example.com/s.json"})",
                        R"({"items":[{"type":"string"}]})", R"({"properties":{"a":{"$id":"x"}}})",
                        R"({"$schema":"http://json-schema.org/draft-04/schema#"})", R"({"type":"float"})",
                        R"({"$ref":"#/$defs/missing"})", R"({"multipleOf":0})", R"(5)"}) {
    EXPECT_FALSE(compile(boost::json::parse(s))) << s;
  }
}

TEST(schema_keywords, error_maps_to_gateway_error) {
  auto c = must_compile(R"({"properties":{"a":{"type":"integer"}}})");
  auto v = c->validate_text(R"({"a":"x"})");
  ASSERT_TRUE(v);
  auto e = to_error(*v);
  EXPECT_EQ(e.code, sluice::errc::upstream_protocol);
  EXPECT_TRUE(e.retryable);
  EXPECT_EQ(e.param, "/a");
  auto m = c->validate_text(R"({"a":)");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->what, validation_error::kind::malformed_json);
}
