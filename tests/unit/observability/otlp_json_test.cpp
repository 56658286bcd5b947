#include "observability/otlp_json.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <random>

using namespace sluice::obs;
namespace json = boost::json;

namespace {

span_record sample_span() {
  span_record s;
  s.trace = *[] {
    static trace_id t = new_trace_id();
    return &t;
  }();
  s.id = new_span_id();
  s.name = "chat gpt-4o-mini";
  s.kind = span_kind::client;
  s.start_unix_ns = 1733400000000000000ull;
  s.end_unix_ns = 1733400000123456789ull;
  s.attributes = {{"gen_ai.request.model", std::string("gpt-4o-mini")},
                  {"gen_ai.usage.output_tokens", std::int64_t{42}},
                  {"ratio", 0.5},
                  {"flag", true}};
  return s;
}

const json::value& attribute(const json::value& span, std::string_view key) {
  for (const auto& a : span.at("attributes").as_array())
    if (a.at("key").as_string() == key) return a.at("value");
  throw std::runtime_error("no attribute " + std::string(key));
}

}  // namespace

TEST(OtlpJson, WritesTheExportRequestOfTheOtlpJsonMapping) {
  auto s = sample_span();
  s.parent = new_span_id();
  s.error = true;
  s.status_message = "upstream answered HTTP 503";
  s.trace_state = "rojo=1";
  const auto v = json::parse(encode_otlp_json({&s, 1}, {"sluice", "0.1.0", "host:7"}));
  const auto& rs = v.at("resourceSpans").at(0);
  EXPECT_EQ(attribute(rs.at("resource"), "service.name").at("stringValue"), "sluice");
  EXPECT_EQ(attribute(rs.at("resource"), "service.instance.id").at("stringValue"), "host:7");
  const auto& scope = rs.at("scopeSpans").at(0);
  EXPECT_EQ(scope.at("scope").at("name"), "sluice");
  const auto& span = scope.at("spans").at(0);
  EXPECT_EQ(span.at("traceId"), s.trace.hex().c_str()) << "ids are hex strings in OTLP/JSON";
  EXPECT_EQ(span.at("spanId"), s.id.hex().c_str());
  EXPECT_EQ(span.at("parentSpanId"), s.parent.hex().c_str());
  EXPECT_EQ(span.at("traceState"), "rojo=1");
  EXPECT_EQ(span.at("kind"), 3);
  EXPECT_EQ(span.at("startTimeUnixNano"), "1733400000000000000") << "64-bit integers are strings";
  EXPECT_EQ(span.at("endTimeUnixNano"), "1733400000123456789");
  EXPECT_EQ(attribute(span, "gen_ai.request.model").at("stringValue"), "gpt-4o-mini");
  EXPECT_EQ(attribute(span, "gen_ai.usage.output_tokens").at("intValue"), "42");
  EXPECT_EQ(attribute(span, "ratio").at("doubleValue"), 0.5);
  EXPECT_EQ(attribute(span, "flag").at("boolValue"), true);
  EXPECT_EQ(span.at("status").at("code"), 2);
  EXPECT_EQ(span.at("status").at("message"), "upstream answered HTTP 503");
}

TEST(OtlpJson, ARootSpanHasNoParentAndASuccessNoStatus) {
  auto s = sample_span();
  const auto v = json::parse(encode_otlp_json({&s, 1}, {}));
  const auto& span = v.at("resourceSpans").at(0).at("scopeSpans").at(0).at("spans").at(0).as_object();
  EXPECT_FALSE(span.contains("parentSpanId"));
  EXPECT_FALSE(span.contains("status")) << "UNSET: the spec's default for a span that did not fail";
  EXPECT_FALSE(span.contains("traceState"));
}

// Property: whatever bytes a name, an attribute or a status holds (control characters, quotes,
// invalid UTF-8), the export parses as JSON and valid UTF-8 comes back unchanged.
TEST(OtlpJson, AnyTextEncodesIntoJsonThatParses) {
  std::mt19937 rng(12345);
  std::vector<span_record> spans;
  for (int i = 0; i < 300; ++i) {
    std::string text(rng() % 40, '\0');
    for (auto& c : text) c = static_cast<char>(rng() % 256);
    auto s = sample_span();
    s.name = text;
    s.status_message = text;
    s.error = i % 2 == 0;
    s.attributes.push_back({"text", text});
    s.attributes.push_back({"nan", std::numeric_limits<double>::quiet_NaN()});
    spans.push_back(std::move(s));
  }
  spans.push_back(sample_span());
  spans.back().name = "caf\xc3\xa9 \"quoted\" \\ tab\t";
  boost::system::error_code ec;
  const auto v = json::parse(encode_otlp_json(spans, {"svc \"x\"", "", ""}), ec);
  ASSERT_FALSE(ec) << ec.message();
  const auto& out = v.at("resourceSpans").at(0).at("scopeSpans").at(0).at("spans").as_array();
  ASSERT_EQ(out.size(), spans.size());
  EXPECT_EQ(out.back().at("name"), "caf\xc3\xa9 \"quoted\" \\ tab\t");
}
