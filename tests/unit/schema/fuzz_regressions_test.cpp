// Inputs the fuzz targets (fuzz/) found, kept as regression tests.
#include <gtest/gtest.h>

#include "test_util.hpp"

using namespace std::string_literals;

// fuzz_validator: the text path (validate_text, used on whole answers) accepted data after a
// complete document ("6\0\0" against an integer schema: valid) where the stream path refuses it.
TEST(schema_fuzz_regressions, text_path_refuses_data_after_the_document) {
  auto s = schema_test::must_compile(R"({"oneOf":[{"type":"integer","multipleOf":6},{"type":"string","const":"x"}]})");
  ASSERT_TRUE(s);
  for (std::string bad : {"6\0\0"s, "6 x"s, "6 6"s, "\"x\"}"s}) {
    SCOPED_TRACE(bad);
    auto text = s->validate_text(bad);
    ASSERT_TRUE(text.has_value());
    EXPECT_EQ(text->what, sluice::schema::validation_error::kind::malformed_json);
    EXPECT_EQ(text->message, "malformed JSON: data after the end of the document");
    sluice::schema::stream_validator sv(s);
    EXPECT_FALSE(sv.feed(bad) && sv.finish());
  }
  EXPECT_FALSE(s->validate_text("6 \r\n\t").has_value()) << "trailing whitespace is still JSON";
  auto obj = schema_test::must_compile(R"({"type":"object","properties":{"city":{"type":"string"}}})");
  ASSERT_TRUE(obj);
  EXPECT_TRUE(obj->validate_text(R"({"city":"Oslo"} trailing)").has_value());
  EXPECT_FALSE(obj->validate_text(R"({"city":"Oslo"} )").has_value());
}

// fuzz_validator: malformed JSON whose first value already violates the schema is reported as
// the violation on the text path: never valid, on any path.
TEST(schema_fuzz_regressions, malformed_json_is_never_valid) {
  auto s = schema_test::must_compile(R"({"type":"array","items":{"enum":["a","b",1,null]},"maxItems":3})");
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->validate_text(R"(2"a",1])").has_value());
  sluice::schema::stream_validator sv(s);
  EXPECT_FALSE(sv.feed(R"(2"a",1])") && sv.finish());
}

namespace {

// The text path's and the stream path's verdicts on `doc`, the stream fed a byte at a time.
std::pair<sluice::schema::verdict, bool> text_and_stream(
    const std::shared_ptr<const sluice::schema::compiled_schema>& s, std::string_view doc) {
  sluice::schema::stream_validator sv(s);
  bool ok = true;
  for (std::size_t i = 0; i < doc.size() && ok; ++i) ok = static_cast<bool>(sv.feed(doc.substr(i, 1)));
  if (ok) ok = static_cast<bool>(sv.finish());
  return {s->validate_text(doc), ok};
}

}  // namespace

// fuzz_validator (fuzz/findings, 2026-12-03): `{"a":1,"a":2}` named different first errors on the
// DOM path (Boost.JSON keeps one member) and the text path (which saw both). A repeated member
// name means different things to different parsers, so the text and stream paths refuse it,
// wherever it is, with its own kind; the DOM path cannot see it.
TEST(schema_fuzz_regressions, a_repeated_member_name_is_refused_on_the_text_and_stream_paths) {
  using kind = sluice::schema::validation_error::kind;
  auto found = schema_test::must_compile(  // the fuzzer's own input
      R"({"type":"object","patternProperties":{"^x-":{"type":"boolean"}},"propertyNames":{"maxLength":8},)"
      R"("dependentRequired":{"a":["B"]},"if":{"required":["a"]},"then":{"minProperties":2},)"
      R"("else":{"maxProperties":1}})");
  ASSERT_TRUE(found);
  auto typed = schema_test::must_compile(R"({"properties":{"a":{"type":"integer"},"b":{}}})");
  ASSERT_TRUE(typed);
  auto two = schema_test::must_compile(  // two evaluations of each object: the general member path
      R"({"allOf":[{"properties":{"a":{}}},{"properties":{"b":{}}}]})");
  ASSERT_TRUE(two);
  auto any = schema_test::must_compile("true");
  ASSERT_TRUE(any);
  std::string wide = "{", wide_dup;  // 40 members: past the scanned names, into the index
  for (int i = 0; i < 40; ++i) wide += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":" + std::to_string(i);
  wide_dup = wide + ",\"k7\":0}";
  wide += "}";
  struct tcase {
    const std::shared_ptr<const sluice::schema::compiled_schema>& schema;
    std::string doc;
    std::string path;  // "" with valid: true
    bool valid;
  };
  const tcase cases[] = {
      {found, R"({"a":1,"a":2})", "/a", false},
      {typed, R"({"a":1,"b":2,"a":3})", "/a", false},
      {typed, R"({"a":1,"a":"x"})", "/a", false},  // a parser keeping the first would call it valid
      {typed, R"({"b":{"c":{"d":1,"d":1}}})", "/b/c/d", false},  // under an unconstrained member
      {two, R"({"b":1,"a":2,"b":3})", "/b", false},
      {any, R"([{"x":1},{"x":1,"y":2,"x~/":3,"x~/":4}])", "/1/x~0~1", false},
      {any, wide, "", true},
      {any, wide_dup, "/k7", false},
      {any, R"([{"a":1},{"a":1}])", "", true},  // the same name in two objects is no repeat
      {typed, R"({"a":1,"b":{"a":2}})", "", true},
  };
  for (const tcase& c : cases) {
    SCOPED_TRACE(c.doc);
    auto [text, stream_ok] = text_and_stream(c.schema, c.doc);
    EXPECT_EQ(stream_ok, c.valid);
    ASSERT_EQ(!text.has_value(), c.valid) << (text ? text->message : "");
    if (c.valid) continue;
    EXPECT_EQ(text->what, kind::duplicate_member) << text->message;
    EXPECT_EQ(text->instance_path, c.path);
    EXPECT_EQ(text->message, "a member name appears more than once in one object");
    EXPECT_NE(sluice::schema::to_error(*text).message.find("repeats a member name at " + c.path),
              std::string::npos);
  }
}
