// Base URLs of the servers sluice talks to (upstreams, engine metrics, the load generator's
// target): "http://host:port/prefix" or "https://api.openai.com". One parser for all of them.
// Pure value types.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace sluice::config {

struct url {
  bool tls = false;
  std::string host;       // name or IP literal (without brackets)
  std::uint16_t port = 0;
  std::string base_path;  // "" or "/v1"-like prefix without a trailing slash
  std::string host_header() const;  // "host" or "host:port" when not the scheme default
  std::string to_string() const;    // for logs: scheme://host:port/base (never credentials)
};

// Rejects user-info ("user:pass@"), queries, fragments, blanks and control characters, an empty
// port after ':', and schemes other than http and https.
result<url> parse_url(std::string_view text);

}  // namespace sluice::config
