// Reading a Responses API event stream in integration tests: the events of an SSE body (type,
// sequence number, data) and the text of a response object's output. Test-only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <boost/json/parse.hpp>

#include "test_client.hpp"

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

// A client's own Responses stream on a raw socket, read until `events` events arrived.
struct open_stream {
  client_socket c;
  std::string got;
  open_stream(std::uint16_t port, const std::string& body, const std::string& extra_headers = "",
              const std::string& path = "/v1/responses")
      : c(port) {
    c.send("POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + extra_headers +
           "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  }
  void read_events(std::size_t events) {
    char buf[4096];
    boost::system::error_code ec;
    auto count = [&] {
      std::size_t n = 0, pos = 0;
      while ((pos = got.find("\ndata: ", pos)) != std::string::npos) ++n, ++pos;
      return n;
    };
    while (count() < events && !ec) got.append(buf, c.sock.read_some(net::buffer(buf), ec));
  }
  // The upstream's response id, from response.created.
  std::string response_id() const {
    auto pos = got.find("\"response\":{\"id\":\"");
    if (pos == std::string::npos) return {};
    pos += 18;
    return got.substr(pos, got.find('"', pos) - pos);
  }
  // The last sequence number read whole.
  std::int64_t last_seq() const {
    auto end = got.rfind("\n\n");
    auto pos = got.rfind("\"sequence_number\":", end);
    return std::strtoll(got.c_str() + pos + 18, nullptr, 10);
  }
};

// A recorded Responses stream as the client got it, with the response id the gateway gave it
// (read from its first event's `response.id`, which must be one of the gateway's: resp_ and 32 hex
// digits) put back to `upstream_id` wherever it stands as a JSON string: what the upstream sent,
// byte for byte, when the gateway changed nothing else. "" when the first event has no such id.
inline std::string with_upstream_id(const std::string& body, const std::string& upstream_id) {
  const auto events = parse_events(body);
  if (events.empty() || !events.front().data.contains("response")) return {};
  const std::string gateway_id(events.front().data.at("response").at("id").as_string());
  if (gateway_id.size() != 37 || gateway_id.rfind("resp_", 0) != 0 ||
      gateway_id.find_first_not_of("0123456789abcdef", 5) != std::string::npos)
    return {};
  std::string out = body;
  const std::string from = "\"" + gateway_id + "\"", to = "\"" + upstream_id + "\"";
  for (auto at = out.find(from); at != std::string::npos; at = out.find(from, at + to.size())) out.replace(at, from.size(), to);
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
