// The limits OpenAI documents for strict schemas (depth counted through $ref targets, properties,
// enum values, total string length) and compile_purpose::check_only, the mode tool schemas are
// compiled in, including its own entry in the cache.
#include <gtest/gtest.h>

#include <string>

#include "schema/cache.hpp"
#include "test_util.hpp"

using namespace sluice::schema;
namespace json = boost::json;

namespace {

sluice::error refused(const json::value& schema, const compile_limits& lim = {},
                      compile_purpose purpose = compile_purpose::validate) {
  auto r = compile(schema, lim, purpose);
  EXPECT_FALSE(r.has_value()) << json::serialize(schema).substr(0, 300);
  if (r) return {};
  EXPECT_EQ(r.err().code, sluice::errc::bad_request);
  return r.err();
}

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

// $defs a0..a{n-1}, each an object whose member x is the next one; a{n} is a string. The root is
// a $ref to a0, so a value nests n levels deep although no $defs entry nests more than one.
json::value ref_chain(int n) {
  json::object defs;
  for (int i = 0; i < n; ++i)
    defs["a" + std::to_string(i)] = json::object{
        {"type", "object"},
        {"properties", json::object{{"x", json::object{{"$ref", "#/$defs/a" + std::to_string(i + 1)}}}}}};
  defs["a" + std::to_string(n)] = json::object{{"type", "string"}};
  return json::object{{"$defs", defs}, {"$ref", "#/$defs/a0"}};
}

// `levels` levels of properties around `inner`.
json::value nest(int levels, json::value inner) {
  for (int i = 0; i < levels; ++i) inner = json::object{{"type", "object"}, {"properties", json::object{{"x", inner}}}};
  return inner;
}

}  // namespace

TEST(schema_limits, depth_counts_through_ref_targets) {
  EXPECT_TRUE(compile(ref_chain(10)));
  auto e = refused(ref_chain(11));
  EXPECT_TRUE(contains(e.message, "deeper than 10 levels")) << e.message;
  EXPECT_TRUE(contains(e.message, "through the $ref at /$defs/a9/properties/x/$ref")) << e.message;
  EXPECT_EQ(e.param, "/$defs/a10/properties/x");
  EXPECT_EQ(refused(ref_chain(30)).param, "/$defs/a10/properties/x");
}

TEST(schema_limits, depth_adds_the_use_site_to_the_target) {
  // A $ref used 5 levels down to a target 5 levels deep: 10. One more level on either side: 11.
  auto schema = [](int use, int inside) {
    json::value s = nest(use, json::object{{"$ref", "#/$defs/t"}});
    s.as_object()["$defs"] = json::object{{"t", nest(inside, json::object{{"type", "integer"}})}};
    return s;
  };
  EXPECT_TRUE(compile(schema(5, 5)));
  EXPECT_EQ(refused(schema(6, 5)).param, "/$defs/t/properties/x/properties/x/properties/x/properties/x/properties/x");
  EXPECT_TRUE(contains(refused(schema(5, 6)).message, "deeper than 10"));
  // A $ref to a place written inline counts from where it is used too (allOf adds no level).
  json::value inline_target = nest(5, json::object{{"type", "integer"}});
  json::value user = nest(6, json::object{{"allOf", json::array{json::object{{"$ref", "#/$defs/t"}}}}});
  user.as_object()["$defs"] = json::object{{"t", inline_target}};
  EXPECT_TRUE(contains(refused(user).message, "through the $ref at /properties/x"));
  // The limit is a compile_limits field.
  compile_limits lim;
  lim.max_depth = 3;
  EXPECT_TRUE(compile(ref_chain(3), lim));
  EXPECT_TRUE(contains(refused(ref_chain(4), lim).message, "deeper than 3 levels"));
}

TEST(schema_limits, recursion_still_compiles) {
  // OpenAI's own example of a recursive schema (`"$ref": "#"`) and a recursion through $defs.
  EXPECT_TRUE(compile(json::parse(R"({"type":"object","properties":{"name":{"type":"string"},
      "children":{"type":"array","items":{"$ref":"#"}}},"required":["name","children"],"additionalProperties":false})")));
  auto linked = compile(json::parse(R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},
      "next":{"anyOf":[{"$ref":"#/$defs/node"},{"type":"null"}]}}}},"$ref":"#/$defs/node"})"));
  ASSERT_TRUE(linked);
  // The instance-depth limit of validation bounds what the recursion may nest.
  std::string deep;
  for (int i = 0; i < 200; ++i) deep += R"({"v":1,"next":)";
  deep += "null" + std::string(200, '}');
  auto v = (*linked)->validate_text(deep);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->what, validation_error::kind::limit_exceeded);
  // Mutual recursion, and a recursion whose body reaches a non-recursive target: the target is
  // counted from where the recursion uses it.
  EXPECT_TRUE(compile(json::parse(R"({"$defs":{"a":{"properties":{"b":{"$ref":"#/$defs/b"}}},
      "b":{"items":{"$ref":"#/$defs/a"}}},"$ref":"#/$defs/a"})")));
  json::value with_leaf = json::parse(R"({"$defs":{"node":{"properties":{"kids":{"items":{"$ref":"#/$defs/node"}},
      "leaf":{"$ref":"#/$defs/leaf"}}}},"$ref":"#/$defs/node"})");
  with_leaf.as_object()["$defs"].as_object()["leaf"] = nest(9, json::object{{"type", "string"}});
  EXPECT_TRUE(compile(with_leaf));  // leaf used at 1, 9 levels inside it: 10
  with_leaf.as_object()["$defs"].as_object()["leaf"] = nest(10, json::object{{"type", "string"}});
  EXPECT_TRUE(contains(refused(with_leaf).message, "through the $ref at /$defs/node/properties/leaf/$ref"));
  // The first pass through a recursion counts like any other nesting: entered 9 levels down, a
  // body two levels deep is 11 before it recurses.
  json::value entry = nest(8, json::object{{"$ref", "#/$defs/tree"}});
  entry.as_object()["$defs"] = json::parse(R"({"tree":{"properties":{"kids":{"items":{"$ref":"#/$defs/tree"}}}}})");
  EXPECT_TRUE(compile(entry));
  entry = nest(9, json::object{{"$ref", "#/$defs/tree"}});
  entry.as_object()["$defs"] = json::parse(R"({"tree":{"properties":{"kids":{"items":{"$ref":"#/$defs/tree"}}}}})");
  EXPECT_EQ(refused(entry).param, "/$defs/tree/properties/kids/items");
  // A cycle that never reaches a value is still refused (it is not recursion over the instance).
  EXPECT_TRUE(contains(refused(json::parse(R"({"anyOf":[{"type":"null"},{"$ref":"#"}]})")).message, "cycle"));
}

TEST(schema_limits, total_string_length) {
  auto props = [](int n, std::size_t len) {
    json::object p;
    for (int i = 0; i < n; ++i) {
      std::string name = std::to_string(i) + "_";
      name.resize(len, 'p');
      p[name] = json::object{{"type", "integer"}};
    }
    return json::value(json::object{{"type", "object"}, {"properties", p}});
  };
  EXPECT_TRUE(compile(props(100, 1200)));  // 120,000 characters
  json::value over = props(100, 1200);
  std::string extra = "x";
  over.as_object()["properties"].as_object()[extra] = json::object{};
  auto e = refused(over);
  EXPECT_TRUE(contains(e.message, "120000 characters")) << e.message;
  EXPECT_EQ(e.param, "/properties/x");

  // Enum strings and const values count, wherever they are.
  json::array values;
  for (int i = 0; i < 100; ++i) values.push_back(json::string(std::string(1200, 'e')));
  EXPECT_TRUE(compile(json::object{{"enum", values}}));
  values.back() = json::string(std::string(1201, 'e'));
  EXPECT_EQ(refused(json::object{{"enum", values}}).param, "/enum/99");
  json::value both = json::object{{"properties", json::object{{"a", json::object{{"const", std::string(60000, 'c')}}},
                                                             {"b", json::object{{"const", std::string(60000, 'c')}}}}}};
  EXPECT_EQ(refused(both).param, "/properties/b/const");
  EXPECT_EQ(refused(json::object{{"const", json::array{json::object{{std::string(120001, 'k'), 1}}}}}).param, "/const");
  // $defs names count; names only `required` mentions count once, beside the properties.
  json::value defs = json::object{{"$defs", json::object{{std::string(120001, 'd'), json::object{}}}}};
  EXPECT_EQ(refused(defs).param, "/$defs/" + std::string(120001, 'd'));
  json::value req = props(100, 1200);
  req.as_object()["required"] = json::array{"0_" + std::string(1198, 'p'), "missing"};
  EXPECT_EQ(refused(req).param, "/required");

  // Characters, not bytes: 120,000 euro signs are 360,000 bytes.
  std::string euros;
  for (int i = 0; i < 120000; ++i) euros += "\xE2\x82\xAC";
  EXPECT_TRUE(compile(json::object{{"const", euros}}));
  EXPECT_FALSE(compile(json::object{{"const", euros + "x"}}));

  compile_limits lim;
  lim.max_total_chars = 10;
  EXPECT_TRUE(compile(json::parse(R"({"enum":["abcde","fghij"]})"), lim));
  EXPECT_EQ(refused(json::parse(R"({"enum":["abcde","fghij",1,"k"]})"), lim).param, "/enum/3");
}

TEST(schema_limits, properties_count_each_name_once) {
  // A strict schema lists every property in `required`: 3,000 properties are 3,000, not 6,000.
  json::object p;
  json::array required;
  for (int i = 0; i < 3000; ++i) {
    p["p" + std::to_string(i)] = json::object{{"type", "integer"}};
    required.push_back(json::string("p" + std::to_string(i)));
  }
  json::value strict = json::object{{"type", "object"}, {"properties", p}, {"required", required}, {"additionalProperties", false}};
  EXPECT_TRUE(compile(strict));
  // Names only `required` mentions are names too.
  json::array more = required;
  for (int i = 0; i < 2001; ++i) more.push_back(json::string("q" + std::to_string(i)));
  strict.as_object()["required"] = more;
  auto e = refused(strict);
  EXPECT_TRUE(contains(e.message, "5000 properties")) << e.message;
  EXPECT_EQ(e.param, "/required");
  compile_limits lim;
  lim.max_properties = 2;
  EXPECT_TRUE(compile(json::parse(R"({"properties":{"a":{},"b":{}},"required":["a","b"]})"), lim));
  EXPECT_FALSE(compile(json::parse(R"({"properties":{"a":{},"b":{}},"required":["c"]})"), lim));
}

TEST(schema_check_only, annotations_and_other_dialects_pass) {
  // A non-strict tool schema as clients write them: draft 7, OpenAPI's nullable, formats sluice
  // does not assert, tuple items, a lookahead pattern. Refused for validation, fine for a check.
  auto tool = json::parse(R"({"$schema":"http://json-schema.org/draft-07/schema#","type":"object",
      "title":"Args","description":"d","properties":{
        "id":{"type":"integer","format":"int64","default":1,"examples":[1,2]},
        "when":{"type":"string","format":"duration","nullable":true},
        "pair":{"type":"array","items":[{"type":"string"},{"type":"number"}],"additionalItems":false},
        "pw":{"type":"string","pattern":"^(?=.*[A-Z]).{8,}$"},
        "ref":{"$ref":"#/definitions/thing"},
        "x-vendor":{"type":"string"}},
      "definitions":{"thing":{"type":"string","contentMediaType":"text/plain"}},
      "required":["id"]})");
  EXPECT_FALSE(compile(tool));
  auto r = compile(tool, {}, compile_purpose::check_only);
  ASSERT_TRUE(r) << r.err().message;
  EXPECT_EQ((*r)->purpose(), compile_purpose::check_only);
  EXPECT_EQ((*compile(json::parse(R"({"type":"string"})")))->purpose(), compile_purpose::validate);
}

TEST(schema_check_only, structure_references_and_limits_still_refused) {
  auto check = [](const char* text) { return refused(json::parse(text), {}, compile_purpose::check_only); };
  EXPECT_EQ(check(R"({"properties":{"a":{"$ref":"#/$defs/missing"}}})").param, "/properties/a/$ref");
  EXPECT_TRUE(contains(check(R"({"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"})").message, "cycle"));
  EXPECT_EQ(check(R"({"properties":{"a":{"type":"strin"}}})").param, "/properties/a/type");
  EXPECT_EQ(check(R"({"properties":[]})").param, "/properties");
  EXPECT_EQ(check(R"({"required":"a"})").param, "/required");
  EXPECT_EQ(check(R"({"properties":{"a":{"$ref":"https://example.com/s.json"}}})").param, "/properties/a/$ref");
  EXPECT_EQ(check(R"({"properties":{"a":{"format":7}}})").param, "/properties/a/format");
  EXPECT_TRUE(contains(refused(ref_chain(11), {}, compile_purpose::check_only).message, "deeper than 10"));
  json::object p;
  for (int i = 0; i < 5001; ++i) p["p" + std::to_string(i)] = json::object{};
  EXPECT_TRUE(contains(refused(json::object{{"properties", p}}, {}, compile_purpose::check_only).message, "5000 properties"));
  EXPECT_EQ(refused(json::object{{"enum", json::array{std::string(120001, 'e')}}}, {}, compile_purpose::check_only).param,
            "/enum/0");
  compile_limits lim;
  lim.max_pattern_bytes = 8;
  EXPECT_EQ(refused(json::parse(R"({"patternProperties":{"^[a-z]{1,100}$":{}}})"), lim, compile_purpose::check_only).param,
            "/patternProperties/^[a-z]{1,100}$");
  // patternProperties subschemas are checked (and counted for depth) without their regex.
  EXPECT_EQ(check(R"({"patternProperties":{"^x":{"type":"nope"}}})").param, "/patternProperties/^x/type");
  json::value deep = json::object{{"patternProperties", json::object{{"^x", nest(10, json::object{})}}}};
  EXPECT_TRUE(contains(refused(deep, {}, compile_purpose::check_only).message, "deeper than 10"));
}

TEST(schema_check_only, cache_keeps_purposes_apart) {
  schema_cache cache;
  auto s = json::parse(R"({"type":"string","format":"int32"})");
  auto checked = cache.get_or_compile(s, compile_purpose::check_only);
  ASSERT_TRUE(checked);
  EXPECT_EQ((*checked)->purpose(), compile_purpose::check_only);
  // The same schema for validation is not served from the check's entry: it is refused.
  auto validated = cache.get_or_compile(s);
  ASSERT_FALSE(validated);
  EXPECT_EQ(validated.err().param, "/format");
  auto plain = json::parse(R"({"type":"string"})");
  auto a = cache.get_or_compile(plain);
  auto b = cache.get_or_compile(plain, compile_purpose::check_only);
  ASSERT_TRUE(a && b);
  EXPECT_NE(a->get(), b->get());
  EXPECT_EQ((*a)->purpose(), compile_purpose::validate);
  EXPECT_EQ(cache.get_or_compile(plain, compile_purpose::check_only)->get(), b->get());
  EXPECT_EQ(cache.snapshot().entries, 3u);
}

TEST(schema_limits, cache_compiles_under_its_limits) {
  cache_options o;
  o.limits.max_total_chars = 4;
  schema_cache cache(o);
  EXPECT_TRUE(cache.get_or_compile(json::parse(R"({"const":"abcd"})")));
  auto e = cache.get_or_compile(json::parse(R"({"const":"abcde"})"), compile_purpose::check_only);
  ASSERT_FALSE(e);
  EXPECT_EQ(e.err().param, "/const");
}
