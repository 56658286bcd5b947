// The head of a foreground job's answer (wire_job.hpp), as event 0 of the job's log in Redis:
// {"status":N,"stream":bool,"headers":[[name,value],...]}, written by the worker and read back by
// the front; and the job's `wire` field, the method and path it runs. Pure functions; any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/beast/http/fields.hpp>
#include <boost/beast/http/verb.hpp>

namespace sluice::proxy {

namespace bhttp = boost::beast::http;

// The head of a relayed answer, as event 0 of a foreground job's log.
struct wire_head {
  unsigned status = 0;
  bool stream = false;  // a chunked body follows, piece by piece; else the pieces make a whole body
  std::vector<std::pair<std::string, std::string>> headers;  // end-to-end fields only
};
// Hop-by-hop fields (Connection, Transfer-Encoding, Content-Length, ...) are left out: the front
// frames its own message.
std::string wire_head_text(const bhttp::fields& fields, unsigned status, bool stream);
// nullopt: not a head (malformed JSON, a status outside 100-599, a field that is not a pair of
// strings).
std::optional<wire_head> parse_wire_head(std::string_view text);

// A foreground job's `wire` field: the method and the path ("POST /v1/chat/completions").
std::string wire_target(bhttp::verb method, std::string_view path);
// nullopt: not one the gateway makes.
std::optional<std::pair<bhttp::verb, std::string>> parse_wire_target(std::string_view wire);

}  // namespace sluice::proxy
