// Where a Redis server is: "redis://[user:password@]host[:port][/db]" or "rediss://..." (TLS).
// A pure value type and its parser; no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace sluice::redis {

struct endpoint {
  bool tls = false;       // rediss://
  std::string host;       // name or IP literal (without brackets)
  std::uint16_t port = 6379;
  std::string user;       // ACL user (Redis 6+); empty: the legacy one-argument AUTH
  std::string password;   // from the URL (percent-decoded); empty: none (or from the environment)
  std::uint32_t db = 0;   // SELECT'ed after AUTH when not 0

  // For logs: scheme://host:port/db. Never the user or the password.
  std::string to_string() const;
};

// Accepts the schemes redis:// and rediss://, user-info with percent-escapes ("user:password@";
// ":password@" for the legacy password-only AUTH; "user@" for a user without a password), IPv6
// literals in brackets, a decimal port (default 6379) and a decimal database number as the only path segment.
// Rejects queries, fragments, blanks and control characters, an empty host, a bad port or db.
// Errors never repeat the password.
result<endpoint> parse_url(std::string_view text);

}  // namespace sluice::redis
