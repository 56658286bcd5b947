#include "config/url.hpp"

#include <charconv>

namespace sluice::config {

std::string url::host_header() const {
  bool default_port = (tls && port == 443) || (!tls && port == 80);
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return default_port ? h : h + ":" + std::to_string(port);
}

std::string url::to_string() const {
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return std::string(tls ? "https://" : "http://") + h + ":" + std::to_string(port) + base_path;
}

result<url> parse_url(std::string_view text, query_rule q) {
  auto bad = [&](std::string_view why) {
    return error::make(errc::bad_request, "invalid URL '" + std::string(text) + "': " + std::string(why));
  };
  url u;
  std::string_view rest;
  if (text.substr(0, 7) == "http://") {
    rest = text.substr(7);
  } else if (text.substr(0, 8) == "https://") {
    u.tls = true;
    rest = text.substr(8);
  } else {
    return bad("scheme must be http:// or https://");
  }
  if (rest.find('#') != std::string_view::npos) return bad("a fragment is not allowed");
  if (rest.find_first_of(std::string_view(" \t\r\n\0", 5)) != std::string_view::npos) return bad("blanks or control characters");
  if (auto mark = rest.find('?'); mark != std::string_view::npos) {
    if (q == query_rule::refused) return bad("a query is not allowed");
    u.query = std::string(rest.substr(mark + 1));
    if (u.query.empty()) return bad("an empty query");
    rest = rest.substr(0, mark);
  }
  auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash);
  if (authority.find('@') != std::string_view::npos) return bad("credentials in the URL are not allowed");
  std::string_view host = authority, port;
  if (!authority.empty() && authority.front() == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos) return bad("unterminated IPv6 literal");
    host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') return bad("junk after IPv6 literal");
      port = authority.substr(close + 2);
      if (port.empty()) return bad("empty port");
    }
  } else if (auto colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
    if (port.empty()) return bad("empty port");
  }
  if (host.empty()) return bad("missing host");
  u.host = std::string(host);
  if (port.empty()) {
    u.port = u.tls ? 443 : 80;
  } else {
    unsigned p = 0;
    auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
    if (ec != std::errc{} || ptr != port.data() + port.size() || p == 0 || p > 65535) return bad("invalid port");
    u.port = static_cast<std::uint16_t>(p);
  }
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  u.base_path = std::string(path);
  return u;
}

}  // namespace sluice::config
