// Dialects: the root $schema picks draft 2020-12, 2019-09 or 07, and each keyword means what its
// draft says (array-form items and additionalItems, draft 7's ignored $ref siblings and
// dependencies); keywords of another draft are refused by name with their pointer. Every instance
// goes through the DOM, text and stream paths (test_util.hpp's check()).
#include <gtest/gtest.h>

#include <string>

#include "schema/cache.hpp"
#include "test_util.hpp"

using namespace sluice::schema;
using schema_test::check;
using schema_test::must_compile;
namespace json = boost::json;

namespace {

const std::string d7 = R"("$schema":"http://json-schema.org/draft-07/schema#")";
const std::string d2019 = R"("$schema":"https://json-schema.org/draft/2019-09/schema")";
const std::string d2020 = R"("$schema":"https://json-schema.org/draft/2020-12/schema")";

// `{<dialect>,<rest>}`
std::string in(const std::string& dialect, const std::string& rest) { return "{" + dialect + "," + rest + "}"; }

sluice::error refused(const std::string& text, compile_purpose purpose = compile_purpose::validate) {
  auto r = compile(json::parse(text), {}, purpose);
  EXPECT_FALSE(r) << text;
  return r ? sluice::error{} : r.err();
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(schema_dialects, root_schema_uri_picks_the_dialect) {
  struct row {
    const char* uri;
    dialect d;
  };
  for (const row& r : {row{"http://json-schema.org/draft-07/schema#", dialect::draft7},
                       row{"http://json-schema.org/draft-07/schema", dialect::draft7},
                       row{"https://json-schema.org/draft-07/schema#", dialect::draft7},
                       row{"https://json-schema.org/draft/2019-09/schema", dialect::draft2019_09},
                       row{"https://json-schema.org/draft/2019-09/schema#", dialect::draft2019_09},
                       row{"http://json-schema.org/draft/2019-09/schema", dialect::draft2019_09},
                       row{"https://json-schema.org/draft/2020-12/schema", dialect::draft2020_12},
                       row{"https://json-schema.org/draft/2020-12/schema#", dialect::draft2020_12},
                       row{"http://json-schema.org/draft/2020-12/schema", dialect::draft2020_12}}) {
    auto s = must_compile(std::string(R"({"$schema":")") + r.uri + R"(","type":"string"})");
    ASSERT_TRUE(s) << r.uri;
    EXPECT_EQ(s->dialect(), r.d) << r.uri;
  }
  EXPECT_EQ(must_compile(R"({"type":"string"})")->dialect(), dialect::draft2020_12);
  EXPECT_EQ(must_compile("true")->dialect(), dialect::draft2020_12);
}

TEST(schema_dialects, other_dialects_are_refused_where_validated) {
  for (const char* uri : {"http://json-schema.org/draft-04/schema#", "http://json-schema.org/draft-06/schema#",
                          "https://json-schema.org/draft/2021-01/schema", "json-schema.org/draft-07/schema#",
                          "https://example.com/my-meta"}) {
    auto e = refused(std::string(R"({"$schema":")") + uri + R"("})");
    EXPECT_EQ(e.code, sluice::errc::bad_request);
    EXPECT_EQ(e.param, "/$schema") << uri;
    EXPECT_TRUE(contains(e.message, uri)) << e.message;
    EXPECT_TRUE(contains(e.message, "2020-12, 2019-09 and draft-07")) << e.message;
  }
  EXPECT_EQ(refused(R"({"$schema":7})").param, "/$schema");
  // Where nothing is validated any dialect may be named; it is read as 2020-12.
  auto c = compile(json::parse(R"({"$schema":"http://json-schema.org/draft-04/schema#","type":"object"})"), {},
                   compile_purpose::check_only);
  ASSERT_TRUE(c) << c.err().message;
  EXPECT_EQ((*c)->dialect(), dialect::draft2020_12);
  // $schema below the root is refused as before, whatever it names.
  EXPECT_EQ(refused(in(d7, R"("properties":{"a":{)" + d7 + "}}")).param, "/properties/a/$schema");
}

TEST(schema_dialects, definitions_beside_defs_in_every_dialect) {
  for (const std::string& d : {d7, d2019, d2020}) {
    auto s = must_compile(in(d, R"("definitions":{"n":{"type":"integer"}},"$defs":{"s":{"type":"string"}},
        "type":"object","properties":{"a":{"$ref":"#/definitions/n"},"b":{"$ref":"#/$defs/s"}})"));
    ASSERT_TRUE(s) << d;
    EXPECT_FALSE(check(s, R"({"a":1,"b":"x"})")) << d;
    auto v = check(s, R"({"a":"1","b":"x"})");
    ASSERT_TRUE(v) << d;
    EXPECT_EQ(v->instance_path, "/a");
    EXPECT_EQ(v->schema_path, "/definitions/n/type");
    v = check(s, R"({"a":1,"b":2})");
    ASSERT_TRUE(v) << d;
    EXPECT_EQ(v->schema_path, "/$defs/s/type");
  }
  // A definition is held to what any subschema is, used or not.
  EXPECT_EQ(refused(R"({"definitions":{"x":{"unevaluatedProperties":false}}})").param,
            "/definitions/x/unevaluatedProperties");
  EXPECT_EQ(refused(R"({"definitions":[]})").param, "/definitions");
}

TEST(schema_dialects, draft7_ignores_the_siblings_of_a_ref) {
  const std::string body = R"("definitions":{"a":{"type":"array"}},
      "properties":{"x":{"$ref":"#/definitions/a","maxItems":1,"unevaluatedItems":false}})";
  auto s7 = must_compile(in(d7, body));
  ASSERT_TRUE(s7);
  EXPECT_FALSE(check(s7, R"({"x":[1,2,3]})"));  // maxItems beside the $ref has no effect
  auto v = check(s7, R"({"x":{}})");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->schema_path, "/definitions/a/type");
  // 2019-09 and 2020-12 apply the siblings: the unsupported one is refused, then maxItems applies.
  EXPECT_EQ(refused(in(d2019, body)).param, "/properties/x/unevaluatedItems");
  EXPECT_EQ(refused(in(d2020, body)).param, "/properties/x/unevaluatedItems");
  auto s19 = must_compile(in(d2019, R"("definitions":{"a":{"type":"array"}},
      "properties":{"x":{"$ref":"#/definitions/a","maxItems":1}})"));
  ASSERT_TRUE(s19);
  v = check(s19, R"({"x":[1,2,3]})");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->schema_path, "/properties/x/maxItems");
  // Draft 7's root $id beside a root $ref is ignored too, so a ref through it is not local.
  EXPECT_EQ(refused(in(d7, R"("$id":"https://example.com/s.json","$ref":"https://example.com/s.json#/definitions/a",
      "definitions":{"a":{}})")).param,
            "/$ref");
  EXPECT_TRUE(must_compile(in(d2019, R"("$id":"https://example.com/s.json","$ref":"https://example.com/s.json#/definitions/a",
      "definitions":{"a":{}})")));
}

TEST(schema_dialects, array_items_and_additional_items_in_draft7_and_2019_09) {
  for (const std::string& d : {d7, d2019}) {
    auto s = must_compile(in(d, R"("type":"array","items":[{"type":"string"},false],"additionalItems":{"type":"integer"})"));
    ASSERT_TRUE(s) << d;
    EXPECT_FALSE(check(s, R"(["a"])")) << d;
    auto v = check(s, R"([1])");
    ASSERT_TRUE(v);
    EXPECT_EQ(v->instance_path, "/0");
    EXPECT_EQ(v->schema_path, "/items/0/type");
    v = check(s, R"(["a",2])");
    ASSERT_TRUE(v);
    EXPECT_EQ(v->instance_path, "/1");
    EXPECT_EQ(v->schema_path, "/items/1");
    EXPECT_EQ(v->message, "array item 1 is not allowed");

    auto closed = must_compile(in(d, R"("items":[{"type":"string"}],"additionalItems":false)"));
    ASSERT_TRUE(closed);
    EXPECT_FALSE(check(closed, R"(["a"])"));
    v = check(closed, R"(["a","b"])");
    ASSERT_TRUE(v);
    EXPECT_EQ(v->schema_path, "/additionalItems");
    auto open = must_compile(in(d, R"("items":[{"type":"string"}],"additionalItems":{"type":"integer"})"));
    ASSERT_TRUE(open);
    EXPECT_FALSE(check(open, R"(["a",1,2])"));
    v = check(open, R"(["a",1,"c"])");
    ASSERT_TRUE(v);
    EXPECT_EQ(v->instance_path, "/2");
    EXPECT_EQ(v->schema_path, "/additionalItems/type");
    // Beside a schema-form items, or none, additionalItems does nothing.
    EXPECT_TRUE(schema_test::valid(in(d, R"("items":{"type":"string"},"additionalItems":false)"), R"(["a","b"])"));
    EXPECT_TRUE(schema_test::valid(in(d, R"("additionalItems":false)"), R"([1,2])"));
    // ... but it is still a subschema sluice must understand.
    EXPECT_EQ(refused(in(d, R"("additionalItems":{"unevaluatedItems":false})")).param,
              "/additionalItems/unevaluatedItems");
  }
  // 2020-12 has prefixItems and no additionalItems.
  auto e = refused(in(d2020, R"("items":[{"type":"string"}])"));
  EXPECT_EQ(e.param, "/items");
  EXPECT_TRUE(contains(e.message, "prefixItems")) << e.message;
  EXPECT_EQ(refused(R"({"items":[{}]})").param, "/items");
  EXPECT_EQ(refused(in(d2020, R"("prefixItems":[{}],"additionalItems":false)")).param, "/additionalItems");
}

TEST(schema_dialects, additional_items_is_a_level_of_depth) {
  compile_limits lim;
  lim.max_depth = 1;
  const std::string one = in(d7, R"("items":[{}],"additionalItems":{})");
  const std::string two = in(d7, R"("items":[{}],"additionalItems":{"items":[{}],"additionalItems":{}})");
  EXPECT_TRUE(compile(json::parse(one), lim));
  auto r = compile(json::parse(two), lim);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.err().param, "/additionalItems/items/0");
}

TEST(schema_dialects, keywords_of_other_drafts_are_refused_by_name) {
  struct row {
    std::string dialect;
    std::string rest;
    std::string param;
    std::string draft;
  };
  for (const row& r : {row{d7, R"("prefixItems":[{}])", "/prefixItems", "draft-07"},
                       row{d7, R"("properties":{"a":{"contains":{},"minContains":2}})", "/properties/a/minContains", "draft-07"},
                       row{d7, R"("contains":{},"maxContains":2)", "/maxContains", "draft-07"},
                       row{d7, R"("dependentRequired":{"a":["b"]})", "/dependentRequired", "draft-07"},
                       row{d2019, R"("items":{"prefixItems":[{}]})", "/items/prefixItems", "draft 2019-09"}}) {
    auto e = refused(in(r.dialect, r.rest));
    EXPECT_EQ(e.param, r.param) << r.rest;
    EXPECT_TRUE(contains(e.message, "\"" + r.param.substr(r.param.rfind('/') + 1) + "\"")) << e.message;
    EXPECT_TRUE(contains(e.message, r.draft)) << e.message;
    // where only checked, another draft's keyword is an annotation like any unknown one
    EXPECT_TRUE(compile(json::parse(in(r.dialect, r.rest)), {}, compile_purpose::check_only)) << r.rest;
  }
  // 2019-09 has minContains/maxContains and dependentRequired, as 2020-12 does.
  auto s = must_compile(in(d2019, R"("contains":{"type":"integer"},"minContains":2,"dependentRequired":{"a":["b"]})"));
  ASSERT_TRUE(s);
  EXPECT_FALSE(check(s, R"([1,2])"));
  EXPECT_EQ(check(s, R"([1,"x"])")->schema_path, "/minContains");
  // $recursiveRef / $recursiveAnchor (2019-09's dynamic references) are refused with their place.
  auto e = refused(in(d2019, R"("$recursiveAnchor":true,"properties":{"kids":{"items":{"$recursiveRef":"#"}}})"));
  EXPECT_TRUE(e.param == "/$recursiveAnchor" || e.param == "/properties/kids/items/$recursiveRef") << e.param;
  e = refused(in(d2019, R"("properties":{"kids":{"items":{"$recursiveRef":"#"}}})"));
  EXPECT_EQ(e.param, "/properties/kids/items/$recursiveRef");
  EXPECT_TRUE(contains(e.message, "\"$recursiveRef\"")) << e.message;
  // dependencies is draft 7's; later drafts split it and do not know it.
  EXPECT_EQ(refused(in(d2019, R"("dependencies":{"a":["b"]})")).param, "/dependencies");
  EXPECT_EQ(refused(R"({"dependencies":{"a":["b"]}})").param, "/dependencies");
}

TEST(schema_dialects, draft7_dependencies_with_names) {
  auto s = must_compile(in(d7, R"("properties":{"card":{"dependencies":{"number":["expiry","cvc"]}}})"));
  ASSERT_TRUE(s);
  EXPECT_FALSE(check(s, R"({"card":{"name":"x"}})"));
  EXPECT_FALSE(check(s, R"({"card":{"number":"1","expiry":"2","cvc":"3"}})"));
  auto v = check(s, R"({"card":{"number":"1","expiry":"2"}})");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->instance_path, "/card");
  EXPECT_EQ(v->schema_path, "/properties/card/dependencies");
  EXPECT_EQ(v->message, "missing property \"cvc\" required by dependencies");
  // A schema-valued dependency (dependentSchemas) is refused by its place ...
  auto e = refused(in(d7, R"("dependencies":{"a":["b"],"c":{"required":["d"]}})"));
  EXPECT_EQ(e.param, "/dependencies/c");
  EXPECT_TRUE(contains(e.message, "dependentSchemas")) << e.message;
  EXPECT_EQ(refused(in(d7, R"("dependencies":{"a":"b"})")).param, "/dependencies/a");
  // ... and only checked where nothing is validated: its structure and references still are.
  EXPECT_TRUE(compile(json::parse(in(d7, R"("dependencies":{"c":{"required":["d"]}})")), {}, compile_purpose::check_only));
  EXPECT_EQ(refused(in(d7, R"("dependencies":{"c":{"$ref":"#/definitions/none"}})"), compile_purpose::check_only).param,
            "/dependencies/c/$ref");
}

TEST(schema_dialects, the_cache_keeps_dialects_apart) {
  // The key is the canonical text, $schema included: one body under two dialects is two entries
  // with two meanings.
  schema_cache cache;
  const std::string body = R"("definitions":{"a":{"type":"array"}},"$ref":"#/definitions/a","maxItems":1)";
  auto a = cache.get_or_compile(json::parse(in(d7, body)));
  auto b = cache.get_or_compile(json::parse(in(d2019, body)));
  auto c = cache.get_or_compile(json::parse("{" + body + "}"));
  auto a2 = cache.get_or_compile(json::parse(in(d7, body)));
  ASSERT_TRUE(a && b && c && a2);
  EXPECT_EQ(a->get(), a2->get());
  EXPECT_NE(a->get(), b->get());
  EXPECT_NE(b->get(), c->get());
  EXPECT_EQ(cache.snapshot().entries, 3u);
  EXPECT_FALSE((*a)->validate_text("[1,2]"));
  EXPECT_TRUE((*b)->validate_text("[1,2]"));
  EXPECT_TRUE((*c)->validate_text("[1,2]"));
}
