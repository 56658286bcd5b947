// The evaluator's shortcuts must not change a verdict: the scalar fast path (a value judged by one
// plain evaluation, closed in one step), a member's evaluation deferred until its value shows it is
// needed, lengths decided from the byte count, `required` tested as a mask, and anyOf-of-types
// folded into a mask at compile time give the same kind, paths and message as the general path.
// check() runs every instance through the DOM walk (general path), the SAX text parse (fast path
// where it applies) and a chunked stream (strings split across chunks take the general path), and
// compares them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_util.hpp"

using schema_test::check;
using schema_test::must_compile;

namespace {

const char* order_schema = R"({
  "type":"object",
  "properties":{
    "id":{"type":"string","pattern":"^ord-[0-9]{6}$"},
    "status":{"enum":["pending","shipped"]},
    "customer":{"type":"object","properties":{
        "name":{"type":"string","minLength":1,"maxLength":10},
        "email":{"type":"string","format":"email"},
        "vip":{"type":"boolean"}},
      "required":["name","email"],"additionalProperties":false},
    "items":{"type":"array","minItems":1,"items":{"type":"object","properties":{
        "sku":{"type":"string","maxLength":8},
        "qty":{"type":"integer","minimum":1,"maximum":1000},
        "price":{"type":"number","exclusiveMinimum":0,"multipleOf":0.01},
        "note":{"anyOf":[{"type":"string"},{"type":"null"}]}},
      "required":["sku","qty","price"],"additionalProperties":false}},
    "total":{"type":["number","null"],"minimum":0},
    "created":{"type":"string","format":"date-time"}
  },
  "required":["id","status","customer","items","total"],
  "additionalProperties":false})";

// The same schema with `"allOf":[{}]` beside every `properties`: each object is then judged by two
// evaluations, which takes members through the general path (no deferred evaluation) without
// changing what any failure says.
void add_empty_all_of(boost::json::value& v) {
  if (auto* o = v.if_object()) {
    if (o->contains("properties") && !o->contains("allOf")) (*o)["allOf"] = boost::json::array{boost::json::object{}};
    for (auto& kv : *o) add_empty_all_of(kv.value());
  } else if (auto* a = v.if_array()) {
    for (auto& e : *a) add_empty_all_of(e);
  }
}

std::string order(const std::string& id, const std::string& name, const std::string& email, const std::string& vip,
                  const std::string& sku, const std::string& qty, const std::string& price, const std::string& note,
                  const std::string& total, const std::string& created) {
  return R"({"id":)" + id + R"(,"status":"shipped","customer":{"name":)" + name + R"(,"email":)" + email +
         R"(,"vip":)" + vip + R"(},"items":[{"sku":"A-1","qty":1,"price":2.5,"note":null},{"sku":)" + sku +
         R"(,"qty":)" + qty + R"(,"price":)" + price + R"(,"note":)" + note + R"(}],"total":)" + total +
         R"(,"created":)" + created + "}";
}

}  // namespace

TEST(schema_fast_path, every_scalar_position_agrees_with_the_general_path) {
  auto s = must_compile(order_schema);
  ASSERT_TRUE(s);
  const std::string good[10] = {R"("ord-123456")", R"("Ada")", R"("ada@example.com")", "true", R"("SKU-1")", "3",
                                "9.99", R"("gift")", "12.5", R"("2024-05-01T10:20:30Z")"};
  EXPECT_FALSE(check(s, order(good[0], good[1], good[2], good[3], good[4], good[5], good[6], good[7], good[8], good[9])));
  // Each position with values that break it (and a few that do not).
  const std::vector<std::string> variants = {"null",        "true",       "0",          "-1",           "1.5",
                                             "1001",        "1e400",      "0.001",      R"("")",        R"("x")",
                                             R"("ord-12")", R"("é日本語")", R"("a@b")", R"("2024-13-01T00:00:00Z")",
                                             R"("SKU-123456789")", "[]",  "{}",         "12345678901234567890"};
  int failures = 0;
  for (int pos = 0; pos < 10; ++pos) {
    for (const auto& v : variants) {
      std::string f[10];
      for (int i = 0; i < 10; ++i) f[i] = i == pos ? v : good[i];
      std::string doc = order(f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9]);
      for (std::size_t chunk : {1u, 3u, 64u}) failures += check(s, doc, chunk).has_value();
    }
  }
  EXPECT_GT(failures, 100) << "the variants must mostly break the document";
}

TEST(schema_fast_path, deferred_member_evaluations_agree_with_the_general_path) {
  // Every position of the order with values that break it, judged once with members deferred (one
  // evaluation per object) and once through the general path (two): the same verdicts throughout.
  auto lone = must_compile(order_schema);
  boost::json::value general_schema = boost::json::parse(order_schema);
  add_empty_all_of(general_schema);
  auto general = must_compile(boost::json::serialize(general_schema));
  ASSERT_TRUE(lone && general);
  const std::string good[10] = {R"("ord-123456")", R"("Ada")", R"("ada@example.com")", "true", R"("SKU-1")", "3",
                                "9.99", R"("gift")", "12.5", R"("2024-05-01T10:20:30Z")"};
  const std::vector<std::string> variants = {"null", "true", "-1", "1.5", "1001", R"("")", R"("x")", R"("a@b")",
                                             R"("é日本語")", "[]", "{}", R"({"sku":"A"})", "[1,{}]"};
  int failures = 0;
  for (int pos = 0; pos < 10; ++pos) {
    for (const auto& v : variants) {
      std::string f[10];
      for (int i = 0; i < 10; ++i) f[i] = i == pos ? v : good[i];
      const std::string doc = order(f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9]);
      auto a = check(lone, doc, 1);
      auto b = check(general, doc, 7);
      ASSERT_EQ(a.has_value(), b.has_value()) << doc;
      if (!a) continue;
      ++failures;
      EXPECT_EQ(a->instance_path, b->instance_path) << doc;
      EXPECT_EQ(a->schema_path, b->schema_path) << doc;
      EXPECT_EQ(a->message, b->message) << doc;
    }
  }
  EXPECT_GT(failures, 80);
  // Unknown members (additionalProperties false or a schema), members out of order.
  for (const char* doc : {R"({"id":"ord-123456","zzz":1})", R"({"customer":{"name":"A","email":"a@b.co","x":{}}})",
                          R"({"total":null,"id":7})"}) {
    auto a = check(lone, doc);
    auto b = check(general, doc);
    ASSERT_TRUE(a && b) << doc;
    EXPECT_EQ(a->instance_path, b->instance_path) << doc;
    EXPECT_EQ(a->schema_path, b->schema_path) << doc;
    EXPECT_EQ(a->message, b->message) << doc;
  }
  auto open = must_compile(R"({"properties":{"a":{"type":"integer"}},"additionalProperties":{"type":"string"}})");
  ASSERT_TRUE(open);
  EXPECT_FALSE(check(open, R"({"a":1,"b":"x","c":"y"})"));
  auto extra = check(open, R"({"a":1,"b":2})");
  ASSERT_TRUE(extra);
  EXPECT_EQ(extra->instance_path, "/b");
  EXPECT_EQ(extra->schema_path, "/additionalProperties/type");
}

TEST(schema_fast_path, evaluation_limit_is_met_at_the_same_place_when_deferred) {
  // A deferred evaluation counts against max_active_evaluations exactly where a spawned one would:
  // every limit gives the same verdict on every path.
  auto s = must_compile(order_schema);
  ASSERT_TRUE(s);
  const std::string doc = order(R"("ord-123456")", R"("Ada")", R"("ada@example.com")", "true", R"("SKU-1")", "3",
                                "9.99", R"("gift")", "12.5", R"("2024-05-01T10:20:30Z")");
  for (std::size_t cap = 1; cap <= 4; ++cap) {
    sluice::schema::validate_limits lim;
    lim.max_active_evaluations = cap;
    auto dom = s->validate(boost::json::parse(doc), lim);
    auto text = s->validate_text(doc, lim);
    sluice::schema::stream_validator sv(s, lim);
    bool ok = true;
    for (std::size_t i = 0; i < doc.size() && ok; i += 2)
      ok = static_cast<bool>(sv.feed(std::string_view(doc).substr(i, 2)));
    if (ok) ok = static_cast<bool>(sv.finish());
    ASSERT_EQ(dom.has_value(), text.has_value()) << cap;
    ASSERT_EQ(dom.has_value(), !ok) << cap;
    if (!dom) continue;
    EXPECT_EQ(dom->what, sluice::schema::validation_error::kind::limit_exceeded) << cap;
    EXPECT_EQ(dom->instance_path, text->instance_path) << cap;
    EXPECT_EQ(dom->message, text->message) << cap;
    ASSERT_TRUE(sv.violation());
    EXPECT_EQ(dom->instance_path, sv.violation()->instance_path) << cap;
  }
}

TEST(schema_fast_path, lengths_decided_from_bytes_agree_with_counted_ones) {
  // A code point is 1-4 bytes: strings of 1-, 2-, 3- and 4-byte characters at and around the bounds.
  auto s = must_compile(R"({"properties":{"a":{"type":"string","minLength":2,"maxLength":3}}})");
  ASSERT_TRUE(s);
  for (const char* ok : {"ab", "abc", "éé", "日本語", "😀😀", "😀😀😀", "a😀", "é日😀"})
    EXPECT_FALSE(check(s, std::string(R"({"a":")") + ok + "\"}")) << ok;
  for (const char* bad : {"", "a", "é", "😀", "abcd", "éééé", "日本語x", "😀😀😀😀"}) {
    auto v = check(s, std::string(R"({"a":")") + bad + "\"}");
    ASSERT_TRUE(v) << bad;
    EXPECT_TRUE(v->schema_path == "/properties/a/minLength" || v->schema_path == "/properties/a/maxLength") << bad;
  }
}

TEST(schema_fast_path, required_beyond_sixty_four_names) {
  // `required` is tested as a mask of the first 64 tracked names; more fall back to the loop, and
  // the first missing name in schema order is the one reported either way.
  for (int count : {64, 70}) {
    std::string req, all;
    for (int i = 0; i < count; ++i) {
      req += (i ? "," : "") + ("\"r" + std::to_string(i) + "\"");
      all += (i ? "," : "") + ("\"r" + std::to_string(i) + "\":" + std::to_string(i));
    }
    auto s = must_compile(R"({"type":"object","required":[)" + req + "]}");
    ASSERT_TRUE(s);
    EXPECT_FALSE(check(s, "{" + all + "}")) << count;
    for (int missing : {0, 3, 63, count - 1}) {
      std::string doc;
      for (int i = 0; i < count; ++i)
        if (i != missing) doc += (doc.empty() ? "" : ",") + ("\"r" + std::to_string(i) + "\":1");
      auto v = check(s, "{" + doc + "}");
      ASSERT_TRUE(v) << count << " " << missing;
      EXPECT_EQ(v->message, "missing required property \"r" + std::to_string(missing) + "\"") << count;
    }
  }
}

TEST(schema_fast_path, nullable_any_of_folds_without_changing_the_failure) {
  // Folded (type-only branches) and not folded (a branch with a keyword) report the same way.
  auto folded = must_compile(R"({"properties":{"a":{"anyOf":[{"type":"string"},{"type":"null"}]}}})");
  auto general = must_compile(R"({"properties":{"a":{"anyOf":[{"type":"string","minLength":0},{"type":"null"}]}}})");
  ASSERT_TRUE(folded && general);
  for (const char* doc : {R"({"a":1})", R"({"a":[1]})", R"({"a":{"b":1}})", R"({"a":true})"}) {
    auto f = check(folded, doc);
    auto g = check(general, doc);
    ASSERT_TRUE(f.has_value()) << doc;
    ASSERT_TRUE(g.has_value()) << doc;
    EXPECT_EQ(f->instance_path, "/a");
    EXPECT_EQ(f->schema_path, "/properties/a/anyOf");
    EXPECT_EQ(f->schema_path, g->schema_path);
    EXPECT_EQ(f->message, g->message);
  }
  for (const char* doc : {R"({"a":"x"})", R"({"a":null})", R"({})"}) EXPECT_FALSE(check(folded, doc)) << doc;
}

TEST(schema_fast_path, folded_types_keep_integer_and_own_type_semantics) {
  // Own type integer, anyOf number|null: 3 passes, 1.5 fails on the node's own type.
  auto s = must_compile(R"({"type":"integer","anyOf":[{"type":"number"},{"type":"null"}]})");
  ASSERT_TRUE(s);
  EXPECT_FALSE(check(s, "3"));
  auto frac = check(s, "1.5");
  ASSERT_TRUE(frac);
  EXPECT_EQ(frac->schema_path, "/type");
  auto str = check(s, R"("x")");
  ASSERT_TRUE(str);
  EXPECT_EQ(str->schema_path, "/type");
  // An integer-only branch is not folded: 1.5 fails anyOf at the number's end, 2 passes.
  auto ints = must_compile(R"({"anyOf":[{"type":"integer"},{"type":"string"}]})");
  ASSERT_TRUE(ints);
  EXPECT_FALSE(check(ints, "2"));
  EXPECT_FALSE(check(ints, "2.0"));
  auto bad = check(ints, "2.5");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->schema_path, "/anyOf");
  // anyOf beside another in-place applicator stays general (the order of failures is the same).
  auto mixed = must_compile(R"({"allOf":[{"minimum":5}],"anyOf":[{"type":"number"},{"type":"null"}]})");
  ASSERT_TRUE(mixed);
  auto m = check(mixed, "3");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->schema_path, "/allOf/0/minimum");
  EXPECT_FALSE(check(mixed, "null"));
}

TEST(schema_fast_path, limits_still_apply_on_the_fast_path) {
  // A pattern-checked string over max_string_bytes is a limit, whole or in pieces.
  auto s = must_compile(R"({"properties":{"a":{"type":"string","pattern":"^x"}}})");
  ASSERT_TRUE(s);
  sluice::schema::validate_limits lim;
  lim.max_string_bytes = 16;
  auto v = s->validate_text(R"({"a":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"})", lim);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->what, sluice::schema::validation_error::kind::limit_exceeded);
  EXPECT_FALSE(s->validate_text(R"({"a":"xxxxxxxxxxxxxxx"})", lim));
  // Not buffered (no pattern/format): any length is fine.
  auto plain = must_compile(R"({"properties":{"a":{"type":"string","maxLength":100}}})");
  EXPECT_FALSE(plain->validate_text(R"({"a":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"})", lim));
}

TEST(schema_fast_path, key_tables_find_every_name_and_only_those) {
  // Small tables are placed collision-free (one probe), big ones probe linearly; names of every
  // length class the hash and the compare treat apart (1-3, 4-7, 8-16, 17+ bytes, shared prefixes).
  for (int count : {1, 2, 5, 64, 65, 300}) {
    std::string props, members;
    std::vector<std::string> names;
    for (int i = 0; i < count; ++i) {
      std::string name = i % 4 == 0   ? std::to_string(i)
                         : i % 4 == 1 ? "key" + std::to_string(i)
                         : i % 4 == 2 ? "a_longer_name_" + std::to_string(i)
                                      : "a_shared_prefix_that_is_long_enough_" + std::to_string(i);
      names.push_back(name);
      props += (i ? "," : "") + ("\"" + name + "\":{\"type\":\"integer\"}");
    }
    auto s = must_compile(R"({"type":"object","additionalProperties":false,"properties":{)" + props + "}}");
    ASSERT_TRUE(s) << count;
    for (const auto& name : names) {
      EXPECT_FALSE(check(s, "{\"" + name + "\":1}")) << count << " " << name;
      auto wrong = check(s, "{\"" + name + "\":\"x\"}");
      ASSERT_TRUE(wrong) << count << " " << name;
      EXPECT_EQ(wrong->schema_path, "/properties/" + name + "/type");
    }
    for (std::string absent : {"", "k", "key", "key0", "a_longer_name_", "a_shared_prefix_that_is_long_enough_",
                               "a_shared_prefix_that_is_long_enough_9999", "999999"}) {
      auto v = check(s, "{\"" + absent + "\":1}");
      ASSERT_TRUE(v) << count << " '" << absent << "'";
      EXPECT_EQ(v->schema_path, "/additionalProperties") << count << " '" << absent << "'";
    }
  }
}

TEST(schema_fast_path, member_names_kept_as_views_still_name_paths_and_hash_objects) {
  // A member matched by `properties` is named by the schema's own copy of the name; others are
  // copied. Paths, additionalProperties messages and object hashes (enum, uniqueItems) must not care.
  auto s = must_compile(R"({"type":"array","uniqueItems":true,"items":{
      "type":"object","properties":{"a":{"type":"object","properties":{"deep":{"type":"integer"}}},"b":{}},
      "additionalProperties":{"type":"integer"},
      "enum":[{"a":{"deep":1}},{"a":{"deep":2},"b":"x"},{"zzz":5}]}})");
  ASSERT_TRUE(s);
  EXPECT_FALSE(check(s, R"([{"a":{"deep":1}},{"b":"x","a":{"deep":2}},{"zzz":5}])"));
  auto dup = check(s, R"([{"a":{"deep":1}},{"a":{"deep":1}}])");
  ASSERT_TRUE(dup);
  EXPECT_EQ(dup->schema_path, "/uniqueItems");
  auto not_enum = check(s, R"([{"a":{"deep":3}}])");
  ASSERT_TRUE(not_enum);
  EXPECT_EQ(not_enum->schema_path, "/items/enum");
  auto deep = check(s, R"([{"a":{"deep":"x"}}])");
  ASSERT_TRUE(deep);
  EXPECT_EQ(deep->instance_path, "/0/a/deep");
  auto extra = check(s, R"([{"a":{"deep":1},"zzz":"no"}])");
  ASSERT_TRUE(extra);
  EXPECT_EQ(extra->instance_path, "/0/zzz");
  auto closed = must_compile(R"({"properties":{"known":{}},"additionalProperties":false})");
  auto v = check(closed, R"({"known":1,"unknown~/name":2})");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->instance_path, "/unknown~0~1name");
  EXPECT_EQ(v->message, "property \"unknown~/name\" is not allowed");
}

TEST(schema_fast_path, member_order_prediction_never_decides_alone) {
  // Names are tried in schema order before hashing; any other order, repeats, gaps and unknown
  // names must give the same verdicts as the hashed lookup.
  auto s = must_compile(R"({"type":"object","additionalProperties":false,"required":["a","d"],
      "properties":{"a":{"type":"integer"},"b":{"type":"string"},"c":{"type":"boolean"},"d":{"type":"null"}}})");
  ASSERT_TRUE(s);
  for (const char* ok : {R"({"a":1,"b":"x","c":true,"d":null})", R"({"d":null,"c":false,"b":"y","a":2})",
                         R"({"a":1,"c":true,"b":"x","d":null})", R"({"a":1,"d":null})"})
    EXPECT_FALSE(check(s, ok)) << ok;
  struct bad_case {
    const char* doc;
    const char* instance_path;
    const char* schema_path;
  };
  for (auto [doc, ip, sp] : {bad_case{R"({"a":1,"b":2,"c":true,"d":null})", "/b", "/properties/b/type"},
                             bad_case{R"({"d":null,"c":false,"b":"y","a":"no"})", "/a", "/properties/a/type"},
                             bad_case{R"({"a":1,"bb":"x","d":null})", "/bb", "/additionalProperties"},
                             bad_case{R"({"a":1,"B":"x","d":null})", "/B", "/additionalProperties"},
                             bad_case{R"({"a":1,"b":"x","c":true})", "", "/required"}}) {
    auto v = check(s, doc);
    ASSERT_TRUE(v) << doc;
    EXPECT_EQ(v->instance_path, ip) << doc;
    EXPECT_EQ(v->schema_path, sp) << doc;
  }
  // Repeats, predicted or not, are refused at the repeat on the text and stream paths.
  for (const char* doc : {R"({"d":null,"a":1,"a":2})", R"({"a":1,"a":"x","d":null})", R"({"a":1,"b":"x","a":1})"}) {
    auto v = s->validate_text(doc);
    ASSERT_TRUE(v) << doc;
    EXPECT_EQ(v->what, sluice::schema::validation_error::kind::duplicate_member) << doc;
    EXPECT_EQ(v->instance_path, "/a") << doc;
  }
}
