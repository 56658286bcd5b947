// A foreground job's head as the front reads it from Redis (proxy/responses/wire_head.hpp): any text either
// is refused or parses into a head that, written again, reads back the same; and a job's `wire`
// field either is refused or names POST/GET and a /v1/ path that writes back unchanged.
#include <boost/beast/http/fields.hpp>

#include "fuzz_util.hpp"
#include "proxy/responses/wire_head.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace sluice::proxy;
  const std::string_view in = sluice::fuzz::as_text(data, size);
  if (auto h = parse_wire_head(in)) {
    sluice::fuzz::require(h->status >= 100 && h->status <= 599, "a parsed head's status is an HTTP status");
    boost::beast::http::fields f;
    bool insertable = true;
    for (const auto& [k, v] : h->headers) {
      // Beast refuses names and values a message cannot carry; such a head was never written by a worker.
      if (k.empty() || k.find_first_of(" \t\r\n:") != std::string::npos || v.find_first_of("\r\n") != std::string::npos) {
        insertable = false;
        break;
      }
      f.insert(k, v);
    }
    if (insertable) {
      auto again = parse_wire_head(wire_head_text(f, h->status, h->stream));
      sluice::fuzz::require(again.has_value(), "a written head reads back");
      sluice::fuzz::require(again->status == h->status && again->stream == h->stream, "status and framing survive");
    }
  }
  if (auto t = parse_wire_target(in)) {
    sluice::fuzz::require(wire_target(t->first, t->second) == in, "a target writes back unchanged");
  }
  return 0;
}
