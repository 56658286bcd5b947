// Reading a Responses API event stream in integration tests: the events of an SSE body (type,
// sequence number, data) and the text of a response object's output. Test-only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <boost/json/parse.hpp>

namespace sluice::test {

struct sse_event {
  std::string type;
  std::int64_t seq;
  boost::json::object data;
};

inline std::vector<sse_event> parse_events(const std::string& body) {
  std::vector<sse_event> out;
  std::size_t pos = 0;
  while ((pos = body.find("data: ", pos)) != std::string::npos) {
    auto end = body.find('\n', pos);
    auto data = boost::json::parse(body.substr(pos + 6, end - pos - 6)).as_object();
    std::string type(data.at("type").as_string());
    const auto* seq = data.if_contains("sequence_number");
    out.push_back({type, seq ? seq->to_number<std::int64_t>() : -1, std::move(data)});
    pos = end;
  }
  return out;
}

inline std::string output_text(const boost::json::object& response) {
  std::string out;
  for (const auto& item : response.at("output").as_array())
    if (const auto* content = item.as_object().if_contains("content"))
      for (const auto& part : content->as_array())
        if (const auto* t = part.as_object().if_contains("text")) out += t->as_string();
  return out;
}

}  // namespace sluice::test
