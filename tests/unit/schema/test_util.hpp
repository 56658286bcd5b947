// Helpers for the schema tests: compile from text, and validate one instance through all three
// paths (DOM, SAX text, stream in small chunks), asserting they agree.
#pragma once

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "schema/schema.hpp"
#include "schema/stream_validator.hpp"

namespace schema_test {

inline std::shared_ptr<const sluice::schema::compiled_schema> must_compile(std::string_view schema_text) {
  auto r = sluice::schema::compile(boost::json::parse(schema_text));
  if (!r) ADD_FAILURE() << "compile failed: " << r.err().message;
  return r ? *r : nullptr;
}

// Validates through validate(), validate_text() and a stream fed `chunk` bytes at a time; all three
// must agree on validity and on the first error's kind, paths and message.
inline sluice::schema::verdict check(const std::shared_ptr<const sluice::schema::compiled_schema>& s,
                                     std::string_view instance, std::size_t chunk = 3) {
  using namespace sluice::schema;
  verdict dom = s->validate(boost::json::parse(instance));
  verdict text = s->validate_text(instance);
  stream_validator sv(s);
  bool ok = true;
  for (std::size_t i = 0; i < instance.size() && ok; i += chunk) ok = static_cast<bool>(sv.feed(instance.substr(i, chunk)));
  if (ok) ok = static_cast<bool>(sv.finish());
  EXPECT_EQ(dom.has_value(), text.has_value()) << instance;
  EXPECT_EQ(dom.has_value(), !ok) << instance;
  if (dom && text) {  // the text path takes the scalar fast path where it can: it must say the same
    EXPECT_EQ(dom->what, text->what) << instance;
    EXPECT_EQ(dom->instance_path, text->instance_path) << instance;
    EXPECT_EQ(dom->schema_path, text->schema_path) << instance;
    EXPECT_EQ(dom->message, text->message) << instance;
  }
  if (dom && !ok && sv.violation()) {
    EXPECT_EQ(dom->instance_path, sv.violation()->instance_path) << instance;
    EXPECT_EQ(dom->schema_path, sv.violation()->schema_path) << instance;
    EXPECT_EQ(dom->message, sv.violation()->message) << instance;
  }
  return dom;
}

inline bool valid(std::string_view schema_text, std::string_view instance) {
  auto s = must_compile(schema_text);
  return s && !check(s, instance).has_value();
}

}  // namespace schema_test
