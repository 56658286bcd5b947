#include "redis/url.hpp"

#include <charconv>
#include <optional>

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

// The text may hold a password: an error names the problem, never repeats the input.
error bad_url(std::string_view why) { return error::make(errc::bad_request, "invalid Redis URL: " + std::string(why)); }

// The scheme (setting e.tls); what follows it in `rest`.
std::optional<error> take_scheme(std::string_view text, endpoint& e, std::string_view& rest) {
  if (text.substr(0, 8) == "redis://") {
    rest = text.substr(8);
  } else if (text.substr(0, 9) == "rediss://") {
    e.tls = true;
    rest = text.substr(9);
  } else {
    return bad_url("scheme must be redis:// or rediss://");
  }
  if (rest.find_first_of("?#") != std::string_view::npos) return bad_url("query and fragment are not allowed");
  for (char c : rest) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return bad_url("blanks or control characters");
  }
  return std::nullopt;
}

// "user:password@" at the start of the authority, percent-decoded into e; the rest left in `authority`.
std::optional<error> take_userinfo(std::string_view& authority, endpoint& e) {
  const auto at = authority.rfind('@');
  if (at == std::string_view::npos) return std::nullopt;
  const std::string_view info = authority.substr(0, at);
  authority = authority.substr(at + 1);
  const auto colon = info.find(':');
  const std::string_view user = info.substr(0, colon);
  if (!percent_decode(user, e.user)) return bad_url("broken %-escape in the user");
  if (colon != std::string_view::npos) {
    if (!percent_decode(info.substr(colon + 1), e.password)) return bad_url("broken %-escape in the password");
    if (e.password.empty()) return bad_url("empty password after ':'");
  }
  return std::nullopt;
}

// "host", "host:port", "[v6]" or "[v6]:port" (port "" when absent).
std::optional<error> split_host_port(std::string_view authority, std::string_view& host, std::string_view& port) {
  host = authority;
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) return bad_url("unterminated IPv6 literal");
    host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') return bad_url("junk after IPv6 literal");
      port = authority.substr(close + 2);
      if (port.empty()) return bad_url("empty port");
    }
  } else if (const auto colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
    if (port.empty()) return bad_url("empty port");
    if (host.find(':') != std::string_view::npos) return bad_url("an IPv6 address needs brackets");
  }
  if (host.empty()) return bad_url("missing host");
  return std::nullopt;
}

// The port (when given) and the database number (the path, when given) into e.
std::optional<error> take_port_and_db(std::string_view port, std::string_view path, endpoint& e) {
  if (!port.empty()) {
    unsigned p = 0;
    if (!parse_decimal(port, p) || p == 0 || p > 65535) return bad_url("invalid port");
    e.port = static_cast<std::uint16_t>(p);
  }
  if (!path.empty()) {
    if (!parse_decimal(path, e.db)) return bad_url("the path must be a database number");
  }
  return std::nullopt;
}

}  // namespace

result<endpoint> parse_url(std::string_view text) {
  endpoint e;
  std::string_view rest;
  if (auto bad = take_scheme(text, e, rest)) return std::move(*bad);
  const auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  const std::string_view path = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash + 1);
  if (auto bad = take_userinfo(authority, e)) return std::move(*bad);
  std::string_view host, port;
  if (auto bad = split_host_port(authority, host, port)) return std::move(*bad);
  e.host = std::string(host);
  if (auto bad = take_port_and_db(port, path, e)) return std::move(*bad);
  return e;
}

}  // namespace sluice::redis
