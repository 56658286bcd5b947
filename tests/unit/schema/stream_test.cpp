// stream_validator: the verdict arrives with the first delta that makes it certain, malformed or
// incomplete output is an error, and memory does not grow with the output.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "test_util.hpp"

using namespace sluice::schema;
using schema_test::must_compile;

namespace {

const char* person = R"({"type":"object","properties":{"name":{"type":"string","enum":["ann","bob"]},
  "age":{"type":"integer","maximum":150},"tags":{"type":"array","items":{"type":"string"},"maxItems":2}},
  "required":["name"],"additionalProperties":false})";

// Feeds `deltas` in order and returns the index of the first one that failed (-1 if none) plus
// finish()'s outcome.
struct outcome {
  int failed_at = -1;
  bool finished_ok = false;
  std::string instance_path, schema_path;
};

outcome run(const char* schema, const std::vector<std::string>& deltas) {
  stream_validator sv(must_compile(schema));
  outcome o;
  for (std::size_t i = 0; i < deltas.size(); ++i) {
    if (!sv.feed(deltas[i])) {
      o.failed_at = static_cast<int>(i);
      break;
    }
  }
  if (o.failed_at < 0) o.finished_ok = static_cast<bool>(sv.finish());
  if (sv.violation()) {
    o.instance_path = sv.violation()->instance_path;
    o.schema_path = sv.violation()->schema_path;
  }
  return o;
}

}  // namespace

TEST(schema_stream, valid_output_in_chunks) {
  auto o = run(person, {R"({"na)", R"(me":"a)", R"(nn","a)", R"(ge":4)", "2", R"(,"tags":["x"]})"});
  EXPECT_EQ(o.failed_at, -1);
  EXPECT_TRUE(o.finished_ok);
}

TEST(schema_stream, wrong_type_fails_at_the_values_first_token) {
  // The string's first character is enough: no need to wait for its end. (A delta holding only
  // the opening quote produces no parser event; the next byte does.)
  auto o = run(person, {R"({"name":"ann","age":)", R"( "f)", R"(orty-two"})"});
  EXPECT_EQ(o.failed_at, 1);
  EXPECT_EQ(o.instance_path, "/age");
  EXPECT_EQ(o.schema_path, "/properties/age/type");
  EXPECT_EQ(run(person, {R"({"tags":)", "{", "}}"}).failed_at, 1);
  EXPECT_EQ(run(person, {R"({"age":)", "[", "]}"}).failed_at, 1);
  EXPECT_EQ(run(person, {R"({"age":)", "tr", "ue", "}"}).failed_at, 2);  // a literal is one token
}

TEST(schema_stream, additional_property_fails_when_the_key_completes) {
  auto o = run(person, {R"({"name":"ann",")", R"(nick)", R"(name")", R"(:"x"})"});
  EXPECT_EQ(o.failed_at, 2);
  EXPECT_EQ(o.instance_path, "/nickname");
  EXPECT_EQ(o.schema_path, "/additionalProperties");
}

TEST(schema_stream, required_fails_at_the_objects_end) {
  auto o = run(person, {R"({"age":30)", "}"});
  EXPECT_EQ(o.failed_at, 1);
  EXPECT_EQ(o.schema_path, "/required");
}

TEST(schema_stream, bounds_fail_at_the_first_offending_token) {
  EXPECT_EQ(run(person, {R"({"tags":["a",)", R"("b",)", R"("c"]})"}).failed_at, 2);  // maxItems at the 3rd item
  EXPECT_EQ(run(person, {R"({"age":15)", "1", "}"}).failed_at, 2);  // a number completes at its delimiter
  EXPECT_EQ(run(R"({"maxLength":5})", {R"("abc)", R"(def)", R"(ghi")"}).failed_at, 1);  // mid-string
  EXPECT_EQ(run(person, {R"({"name":"ann")", R"(,"name2")"}).failed_at, 1);
  EXPECT_EQ(run(person, {R"({"name":"carl")", "}"}).failed_at, 0);  // enum at the string's end
}

TEST(schema_stream, malformed_and_incomplete_output) {
  auto s = must_compile(person);
  stream_validator bad(s);
  EXPECT_TRUE(bad.feed(R"({"name":"ann")"));
  auto r = bad.feed(R"(,,})");
  ASSERT_FALSE(r);
  ASSERT_NE(bad.violation(), nullptr);
  EXPECT_EQ(bad.violation()->what, validation_error::kind::malformed_json);
  EXPECT_FALSE(bad.feed("}"));  // the error is final

  stream_validator cut(s);
  EXPECT_TRUE(cut.feed(R"({"name":"ann","tags":["x")"));
  EXPECT_FALSE(cut.finish());
  EXPECT_EQ(cut.violation()->what, validation_error::kind::malformed_json);

  stream_validator extra(s);
  EXPECT_TRUE(extra.feed(R"({"name":"ann"} )"));
  EXPECT_FALSE(extra.feed(R"({)"));

  stream_validator ok(s);
  const std::string text = R"( {"name":"bob"}  )";
  EXPECT_TRUE(ok.feed(text));
  EXPECT_TRUE(ok.finish());
  EXPECT_EQ(ok.bytes_seen(), text.size());
  ok.reset();
  EXPECT_EQ(ok.bytes_seen(), 0u);
  EXPECT_TRUE(ok.feed(R"({"name":"ann"})"));
  EXPECT_TRUE(ok.finish());
}

TEST(schema_stream, long_output_is_not_buffered) {
  // A 16 MiB string value passes although validate_limits::max_string_bytes is 64 KiB: only
  // strings checked by pattern/format are buffered; others are counted and hashed on the fly.
  auto s = must_compile(R"({"properties":{"essay":{"type":"string","minLength":10}}})");
  stream_validator sv(s);
  ASSERT_TRUE(sv.feed(R"({"essay":")"));
  std::string chunk(4096, 'x');
  for (int i = 0; i < 4096; ++i) ASSERT_TRUE(sv.feed(chunk));
  ASSERT_TRUE(sv.feed(R"("})"));
  EXPECT_TRUE(sv.finish());
  // With a pattern, the bound applies and is reported as a limit, not a crash.
  auto p = must_compile(R"({"properties":{"essay":{"type":"string","pattern":"^x+$"}}})");
  stream_validator pv(p);
  ASSERT_TRUE(pv.feed(R"({"essay":")"));
  bool failed = false;
  for (int i = 0; i < 32 && !failed; ++i) failed = !pv.feed(chunk);
  EXPECT_TRUE(failed);
  EXPECT_EQ(pv.violation()->what, validation_error::kind::limit_exceeded);
}

TEST(schema_stream, many_items_in_constant_memory) {
  // 200k array items stream through; the evaluator holds one frame per nesting level.
  auto s = must_compile(R"({"type":"array","items":{"type":"object","properties":{"v":{"type":"integer"}}}})");
  stream_validator sv(s);
  ASSERT_TRUE(sv.feed("["));
  for (int i = 0; i < 200000; ++i) ASSERT_TRUE(sv.feed(i ? R"(,{"v":1})" : R"({"v":1})"));
  ASSERT_TRUE(sv.feed("]"));
  EXPECT_TRUE(sv.finish());
}

TEST(schema_stream, random_splits_agree_with_whole_document) {
  auto s = must_compile(person);
  const std::vector<std::string> docs = {
      R"({"name":"ann","age":42,"tags":["a","b"]})", R"({"name":"bob","age":151})",
      R"({"name":"ann","tags":["a","b","c"]})",     R"({"name":"ann","age":4.5})",
      R"({"name":"ann","x":1})",                     R"({"age":1})",
      R"({"name":"ann","tags":["\u00e9\ud83d\ude00"]})"};
  std::mt19937 rng(7);
  for (const auto& d : docs) {
    bool whole = !s->validate_text(d).has_value();
    for (int round = 0; round < 50; ++round) {
      stream_validator sv(s);
      bool ok = true;
      std::size_t pos = 0;
      while (pos < d.size() && ok) {
        std::size_t n = std::uniform_int_distribution<std::size_t>(1, 5)(rng);
        ok = static_cast<bool>(sv.feed(std::string_view(d).substr(pos, n)));
        pos += n;
      }
      if (ok) ok = static_cast<bool>(sv.finish());
      EXPECT_EQ(ok, whole) << d;
    }
  }
}
