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
  std::string query;      // what followed '?' (only where parse_url allowed one), without it
  std::string host_header() const;  // "host" or "host:port" when not the scheme default
  std::string to_string() const;    // for logs: scheme://host:port/base (never credentials, never the query)
};

enum class query_rule : std::uint8_t { refused, allowed };

// Rejects user-info ("user:pass@"), fragments, blanks and control characters, an empty port after
// ':', schemes other than http and https, and a query unless `q` allows one (an upstream's: Azure
// OpenAI's api-version).
result<url> parse_url(std::string_view text, query_rule q = query_rule::refused);

}  // namespace sluice::config
