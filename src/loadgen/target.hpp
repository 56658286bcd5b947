// Parsing of flood's --target base URL and --header values. Pure functions, no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace sluice::loadgen {

struct target_url {
  std::string host;         // name or IP literal, without IPv6 brackets
  std::uint16_t port = 80;
  std::string host_header;  // the Host header value: host[:port], the port only when not 80
  std::string base_path;    // path prefix without a trailing '/', often empty
};

// Accepts http://HOST[:PORT][/PREFIX]. https is refused: flood speaks plain HTTP/1.1 to test targets.
result<target_url> parse_target(std::string_view url);

struct header_line {
  std::string_view name, value;
};
// Splits "Name: value"; the name must be an HTTP token, neither may contain CR, LF or NUL.
result<header_line> parse_header_line(std::string_view line);

}  // namespace sluice::loadgen
