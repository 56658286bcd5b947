// Schemas as the official SDKs send them (tests/data/schemas/, written by hand in the shape those
// libraries produce): the npm SDK's zodTextFormat with zod 4 (draft-07 $schema, definitions and
// $ref for recursion, nullable as anyOf with null) and the Python SDK's to_strict_json_schema of a
// pydantic model ($defs, $ref, title/description/default annotations). Each must compile for
// validation, and conforming and non-conforming outputs get the same verdict -- kind, paths and
// message -- on the DOM, text and stream paths (several chunk sizes).
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.hpp"

using namespace sluice::schema;
namespace json = boost::json;

namespace {

std::shared_ptr<const compiled_schema> load(const std::string& name, dialect expected) {
  std::ifstream in(std::string(SLUICE_TEST_DATA_DIR) + "/schemas/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  auto r = compile(json::parse(ss.str()));
  if (!r) {
    ADD_FAILURE() << name << ": " << r.err().message;
    return nullptr;
  }
  EXPECT_EQ((*r)->dialect(), expected) << name;
  return *r;
}

struct bad_case {
  std::string instance;
  std::string instance_path;
  std::string schema_path;
};

// One verdict for every chunk size (the stream path's early failures must not depend on where the
// deltas are cut).
verdict check_all(const std::shared_ptr<const compiled_schema>& s, const std::string& instance) {
  verdict first = schema_test::check(s, instance, 1);
  for (std::size_t chunk : {2, 3, 7, 64}) {
    verdict v = schema_test::check(s, instance, chunk);
    EXPECT_EQ(v.has_value(), first.has_value()) << instance;
    if (v && first) {
      EXPECT_EQ(v->schema_path, first->schema_path) << instance;
    }
  }
  return first;
}

void run(const std::shared_ptr<const compiled_schema>& s, const std::vector<std::string>& good,
         const std::vector<bad_case>& bad) {
  ASSERT_TRUE(s);
  for (const auto& g : good) {
    auto v = check_all(s, g);
    EXPECT_FALSE(v) << g << "\n -> " << (v ? v->schema_path + ": " + v->message : "");
  }
  for (const auto& b : bad) {
    auto v = check_all(s, b.instance);
    ASSERT_TRUE(v) << b.instance;
    EXPECT_EQ(v->what, validation_error::kind::violation) << b.instance;
    EXPECT_EQ(v->instance_path, b.instance_path) << b.instance << "\n -> " << v->message;
    EXPECT_EQ(v->schema_path, b.schema_path) << b.instance << "\n -> " << v->message;
  }
}

// A conforming zod output with every member in the schema's order, `%MORE%` replaced by `more`.
std::string event(const std::string& more) {
  std::string e = R"({"title":"Quarterly review","kind":"meeting","starts_at":"2025-03-04T09:30:00Z",
    "duration_minutes":45,"location":null,"priority":2.5,
    "attendees":[{"name":"Ana","email":"ana@example.com","role":"organizer"},{"name":"Bo","email":null,"role":"optional"}],
    "source":{"channel":"email","message_id":"<m1@example.com>"},
    "agenda":{"topic":"Numbers","subtopics":[{"topic":"Revenue","subtopics":[{"topic":"EMEA","subtopics":[]}]},{"topic":"Costs","subtopics":[]}]},
    "tags":["q1","finance"]%MORE%})";
  return e.replace(e.find("%MORE%"), 6, more);
}

}  // namespace

TEST(schema_sdk, zod4_text_format_draft7) {
  auto s = load("zod4_text_format.json", dialect::draft7);
  std::string valid = event("");
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string t = valid;
    auto at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return t.replace(at, from.size(), to);
  };
  run(s,
      {valid, replace(R"("location":null)", R"("location":"Room 4")"), replace(R"("priority":2.5)", R"("priority":null)"),
       replace(R"("tags":["q1","finance"])", R"("tags":[])"),
       replace(R"({"topic":"Costs","subtopics":[]})", R"({"topic":"Costs","subtopics":[{"topic":"a","subtopics":[]}]})")},
      {
          {event(R"(,"notes":"x")"), "/notes", "/additionalProperties"},
          {replace(R"("source":{"channel":"email","message_id":"<m1@example.com>"},)", ""), "", "/required"},
          {replace(R"("kind":"meeting")", R"("kind":"party")"), "/kind", "/properties/kind/enum"},
          {replace(R"("starts_at":"2025-03-04T09:30:00Z")", R"("starts_at":"next tuesday")"), "/starts_at",
           "/properties/starts_at/format"},
          {replace(R"("duration_minutes":45)", R"("duration_minutes":45.5)"), "/duration_minutes",
           "/properties/duration_minutes/type"},
          {replace(R"("location":null)", R"("location":5)"), "/location", "/properties/location/anyOf"},
          {replace(R"("priority":2.5)", R"("priority":9)"), "/priority", "/properties/priority/anyOf"},
          {replace(R"("role":"optional")", R"("role":"guest")"), "/attendees/1/role",
           "/properties/attendees/items/properties/role/enum"},
          {replace(R"("email":"ana@example.com")", R"("email":"ana")"), "/attendees/0/email",
           "/properties/attendees/items/properties/email/anyOf"},
          {replace(R"("email":null,)", ""), "/attendees/1", "/properties/attendees/items/required"},
          {replace(R"("channel":"email")", R"("channel":"sms")"), "/source/channel",
           "/properties/source/properties/channel/const"},
          {replace(R"({"topic":"EMEA","subtopics":[]})", R"({"topic":"EMEA"})"), "/agenda/subtopics/0/subtopics/0",
           "/definitions/__schema0/required"},
          {replace(R"({"topic":"EMEA","subtopics":[]})", R"({"topic":"EMEA","subtopics":[],"owner":"x"})"),
           "/agenda/subtopics/0/subtopics/0/owner", "/definitions/__schema0/additionalProperties"},
          {replace(R"("tags":["q1","finance"])", R"("tags":["q1",2])"), "/tags/1", "/properties/tags/items/type"},
      });
  // A truncated output is malformed on the text path and incomplete on the stream.
  std::string cut = valid.substr(0, valid.size() / 2);
  auto v = s->validate_text(cut);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->what, validation_error::kind::malformed_json);
}

TEST(schema_sdk, pydantic_strict_json_schema_2020_12) {
  auto s = load("pydantic_strict.json", dialect::draft2020_12);
  const std::string valid = R"({"kind":"invoice","number":"2025-0042","status":"sent",
    "billing_address":{"street":"Hauptstr. 1","city":"Berlin","postal_code":"10115","country":"DE"},
    "shipping_address":null,
    "items":[{"description":"Widget","quantity":3,"unit_price":9.99,"discount":null},
             {"description":"Gadget","quantity":1,"unit_price":120,"discount":0.1}],
    "currency":"EUR",
    "notes":[{"text":"Thanks","replies":[{"text":"You're welcome","replies":[]}]}]})";
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string t = valid;
    auto at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return t.replace(at, from.size(), to);
  };
  run(s,
      {valid,
       replace(R"("shipping_address":null)",
               R"("shipping_address":{"street":"Am Hafen 2","city":"Hamburg","postal_code":null,"country":"DE"})"),
       replace(R"("notes":[{"text":"Thanks","replies":[{"text":"You're welcome","replies":[]}]}])", R"("notes":[])")},
      {
          {replace(R"("kind":"invoice")", R"("kind":"receipt")"), "/kind", "/properties/kind/const"},
          {replace(R"("status":"sent")", R"("status":"lost")"), "/status", "/$defs/Status/enum"},
          {replace(R"("postal_code":"10115")", R"("postal_code":10115)"), "/billing_address/postal_code",
           "/$defs/Address/properties/postal_code/anyOf"},
          {replace(R"(,"country":"DE"})", "}"), "/billing_address", "/$defs/Address/required"},
          {replace(R"("shipping_address":null)", R"("shipping_address":{"street":"x"})"), "/shipping_address",
           "/properties/shipping_address/anyOf"},
          {replace(R"("quantity":3)", R"("quantity":"3")"), "/items/0/quantity", "/$defs/LineItem/properties/quantity/type"},
          {replace(R"("unit_price":120)", R"("unit_price":-1)"), "/items/1/unit_price",
           "/$defs/LineItem/properties/unit_price/minimum"},
          {replace(R"("discount":0.1)", R"("discount":0.1,"tax":0.19)"), "/items/1/tax", "/$defs/LineItem/additionalProperties"},
          {replace(R"({"text":"You're welcome","replies":[]})", R"({"text":"You're welcome"})"), "/notes/0/replies/0",
           "/$defs/Note/required"},
          {replace(R"("currency":"EUR")", R"("currency":null)"), "/currency", "/properties/currency/type"},
          {replace(R"("kind":"invoice",)", R"("kind":"invoice","total":1,)"), "/total", "/additionalProperties"},
      });
}
