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
