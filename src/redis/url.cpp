#include "redis/url.hpp"

#include <charconv>

namespace sluice::redis {

std::string endpoint::to_string() const {
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  std::string out = tls ? "rediss://" : "redis://";
  out += h;
  out += ':';
  out += std::to_string(port);
  out += '/';
  out += std::to_string(db);
  return out;
}

namespace {

int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX escapes decoded; false on a broken escape.
bool percent_decode(std::string_view in, std::string& out) {
  out.clear();
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out += in[i];
      continue;
    }
    if (i + 2 >= in.size()) return false;
    const int hi = hex_value(in[i + 1]), lo = hex_value(in[i + 2]);
    if (hi < 0 || lo < 0) return false;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return true;
}

template <class T>
bool parse_decimal(std::string_view s, T& out) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && ptr == s.data() + s.size();
}

}  // namespace

result<endpoint> parse_url(std::string_view text) {
  // The text may hold a password: an error names the problem, never repeats the input.
  auto bad = [](std::string_view why) {
    return error::make(errc::bad_request, "invalid Redis URL: " + std::string(why));
  };
  endpoint e;
  std::string_view rest;
  if (text.substr(0, 8) == "redis://") {
    rest = text.substr(8);
  } else if (text.substr(0, 9) == "rediss://") {
    e.tls = true;
    rest = text.substr(9);
  } else {
    return bad("scheme must be redis:// or rediss://");
  }
  if (rest.find_first_of("?#") != std::string_view::npos) return bad("query and fragment are not allowed");
  for (char c : rest) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return bad("blanks or control characters");
  }
  const auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  const std::string_view path = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash + 1);

  if (const auto at = authority.rfind('@'); at != std::string_view::npos) {
    const std::string_view info = authority.substr(0, at);
    authority = authority.substr(at + 1);
    const auto colon = info.find(':');
    const std::string_view user = info.substr(0, colon);
    if (!percent_decode(user, e.user)) return bad("broken %-escape in the user");
    if (colon != std::string_view::npos) {
      if (!percent_decode(info.substr(colon + 1), e.password)) return bad("broken %-escape in the password");
      if (e.password.empty()) return bad("empty password after ':'");
    }
  }

  std::string_view host = authority, port;
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) return bad("unterminated IPv6 literal");
    host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') return bad("junk after IPv6 literal");
      port = authority.substr(close + 2);
      if (port.empty()) return bad("empty port");
    }
  } else if (const auto colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
    if (port.empty()) return bad("empty port");
    if (host.find(':') != std::string_view::npos) return bad("an IPv6 address needs brackets");
  }
  if (host.empty()) return bad("missing host");
  e.host = std::string(host);
  if (!port.empty()) {
    unsigned p = 0;
    if (!parse_decimal(port, p) || p == 0 || p > 65535) return bad("invalid port");
    e.port = static_cast<std::uint16_t>(p);
  }
  if (!path.empty()) {
    if (!parse_decimal(path, e.db)) return bad("the path must be a database number");
  }
  return e;
}

}  // namespace sluice::redis
