// An OTLP/HTTP collector for tests: a recording listener that answers 200 and parses the spans it
// was sent (JSON), by span id. Test-only.
#pragma once

#include <boost/json.hpp>

#include <map>
#include <string>

#include "recording_upstream.hpp"
#include "test_client.hpp"

namespace sluice::test {

// The collector: every span it was sent, by span id, and the bodies as they came.
struct collector {
  recording_upstream listener{[](const recording_upstream::seen&) { return recording_upstream::response(200, "{}"); }};
  std::map<std::string, boost::json::object> spans() const {
    std::map<std::string, boost::json::object> out;
    for (const auto& r : listener.requests()) {
      const auto v = boost::json::parse(r.body);
      for (const auto& rs : v.at("resourceSpans").as_array())
        for (const auto& ss : rs.at("scopeSpans").as_array())
          for (const auto& s : ss.at("spans").as_array()) out[std::string(s.at("spanId").as_string())] = s.as_object();
    }
    return out;
  }
  std::map<std::string, boost::json::object> await(std::size_t n) const {
    std::map<std::string, boost::json::object> got;
    test::wait_until([&] { return (got = spans()).size() >= n; }, std::chrono::milliseconds(10000));
    return got;
  }
};

// An attribute's value as text (a string's or an integer's), "<absent>" when the span has none.
inline std::string attribute(const boost::json::object& span, std::string_view key) {
  for (const auto& a : span.at("attributes").as_array()) {
    if (a.at("key").as_string() != key) continue;
    const auto& v = a.at("value").as_object();
    if (auto* s = v.if_contains("stringValue")) return std::string(s->as_string());
    if (auto* i = v.if_contains("intValue")) return std::string(i->as_string());
    return boost::json::serialize(a.at("value"));
  }
  return "<absent>";
}

}  // namespace sluice::test
