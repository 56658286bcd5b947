#include "http/request_framing.hpp"

namespace sluice::http {

namespace {

constexpr std::string_view http_version_text = "HTTP/1.1";  // the request line's last part (HTTP/1.0 alike)

bool is_ows(char c) noexcept { return c == ' ' || c == '\t'; }

std::string_view trim_ows(std::string_view s) noexcept {
  while (!s.empty() && is_ows(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ows(s.back())) s.remove_suffix(1);
  return s;
}

bool is_alpha(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

// tchar (RFC 9110 5.6.2)
bool is_tchar(char c) noexcept {
  if (is_alpha(c) || is_digit(c)) return true;
  switch (c) {
    case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+': case '-': case '.':
    case '^': case '_': case '`': case '|': case '~':
      return true;
    default:
      return false;
  }
}

bool is_token(std::string_view s) noexcept {
  if (s.empty()) return false;
  for (char c : s)
    if (!is_tchar(c)) return false;
  return true;
}

bool iequals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

// uri-host [":" port] (RFC 3986): reg-name / IPv4 / "[" IP-literal "]", loosely: the characters
// they are made of. Empty is allowed (RFC 9112 3.2: a target without authority sends Host: "").
bool is_host_value(std::string_view v) noexcept {
  for (char c : v) {
    if (is_alpha(c) || is_digit(c)) continue;
    switch (c) {
      case '-': case '.': case '_': case '~': case '!': case '$': case '&': case '\'': case '(': case ')':
      case '*': case '+': case ',': case ';': case '=': case ':': case '%': case '[': case ']':
        continue;
      default:
        return false;
    }
  }
  return true;
}

framing_decision refuse(framing_refusal r, std::string_view message) noexcept {
  framing_decision d;
  d.refusal = r;
  d.message = message;
  return d;
}

// The target form (RFC 9112 3.2). On success sets d.origin_target.
framing_decision check_target(std::string_view method, std::string_view target) noexcept {
  framing_decision d;
  if (target.find('#') != std::string_view::npos)
    return refuse(framing_refusal::bad_target, "invalid request target: a fragment is not allowed");
  if (!target.empty() && target.front() == '/') {  // origin-form
    d.origin_target = target;
    return d;
  }
  if (target == "*") {  // asterisk-form
    if (method != "OPTIONS")
      return refuse(framing_refusal::bad_target, "invalid request target: '*' is only for OPTIONS");
    d.origin_target = target;
    return d;
  }
  // absolute-form: scheme "://" authority path-abempty [ "?" query ]
  const std::size_t colon = target.find(':');
  bool scheme_ok = colon != std::string_view::npos && colon > 0 && is_alpha(target.front());
  for (std::size_t i = 0; scheme_ok && i < colon; ++i) {
    const char c = target[i];
    scheme_ok = is_alpha(c) || is_digit(c) || c == '+' || c == '-' || c == '.';
  }
  if (scheme_ok && target.substr(colon + 1, 2) == "//") {
    const std::string_view scheme = target.substr(0, colon);
    if (!iequals(scheme, "http") && !iequals(scheme, "https"))
      return refuse(framing_refusal::bad_target, "invalid request target: only http and https absolute URIs are served");
    const std::string_view rest = target.substr(colon + 3);
    const std::size_t end = rest.find_first_of("/?");
    const std::string_view authority = rest.substr(0, end);
    if (authority.empty() || authority.find('@') != std::string_view::npos || !is_host_value(authority))
      return refuse(framing_refusal::bad_target, "invalid request target: bad authority in the absolute URI");
    d.origin_target = end == std::string_view::npos ? std::string_view() : rest.substr(end);
    return d;
  }
  // authority-form (host:port) is CONNECT's only; anything else is no request target at all.
  if (colon != std::string_view::npos && target.find('/') == std::string_view::npos)
    return refuse(framing_refusal::bad_target, "invalid request target: authority-form is only for CONNECT");
  return refuse(framing_refusal::bad_target, "invalid request target: expected a path starting with '/'");
}

// Every line's value is a list of decimal numbers, all the same (RFC 9112 6.3 item 5, RFC 9110 8.6).
bool content_length_ok(const field_lines& cl) noexcept {
  if (cl.count > field_lines::capacity) return false;
  std::string_view first;
  for (std::string_view line : cl.kept()) {
    std::size_t at = 0;
    while (true) {
      const std::size_t comma = line.find(',', at);
      const std::string_view item = trim_ows(line.substr(at, comma == std::string_view::npos ? comma : comma - at));
      if (item.empty() || item.size() > 19) return false;  // 19 digits fit in 64 bits
      for (char c : item)
        if (!is_digit(c)) return false;
      // Leading zeros make "05" and "5" the same number: compare numerically.
      std::string_view n = item;
      while (n.size() > 1 && n.front() == '0') n.remove_prefix(1);
      if (first.empty()) first = n;
      else if (n != first) return false;
      if (comma == std::string_view::npos) break;
      at = comma + 1;
    }
  }
  return true;
}

framing_decision check_transfer_encoding(const request_head& head) noexcept {
  const auto& te = head.transfer_encoding;
  if (head.content_length.count > 0)
    return refuse(framing_refusal::content_length_with_transfer_encoding,
                  "a request must not carry both Transfer-Encoding and Content-Length");
  if (head.version < 11)
    return refuse(framing_refusal::bad_transfer_encoding, "Transfer-Encoding is not allowed in an HTTP/1.0 request");
  if (te.count > field_lines::capacity)
    return refuse(framing_refusal::bad_transfer_encoding, "too many Transfer-Encoding lines");
  // The codings of every line in order (one list, RFC 9110 5.3): each a token with optional
  // parameters. Empty elements are refused rather than skipped: the stricter reading can only
  // refuse, never frame a body differently from a more lenient hop.
  std::size_t codings = 0;
  bool chunked_before_last = false;
  bool last_is_chunked = false;
  for (std::string_view line : te.kept()) {
    std::size_t at = 0;
    while (true) {
      const std::size_t comma = line.find(',', at);
      const std::string_view element = trim_ows(line.substr(at, comma == std::string_view::npos ? comma : comma - at));
      const std::size_t semi = element.find(';');
      const std::string_view name = trim_ows(element.substr(0, semi));
      if (!is_token(name))
        return refuse(framing_refusal::bad_transfer_encoding, "malformed Transfer-Encoding");
      if (last_is_chunked) chunked_before_last = true;
      // chunked takes no parameters: "chunked;x=1" is not chunked.
      last_is_chunked = iequals(name, "chunked") && semi == std::string_view::npos;
      if (iequals(name, "chunked") && semi != std::string_view::npos)
        return refuse(framing_refusal::bad_transfer_encoding, "malformed Transfer-Encoding: chunked takes no parameters");
      ++codings;
      if (comma == std::string_view::npos) break;
      at = comma + 1;
    }
  }
  if (!last_is_chunked)
    return refuse(framing_refusal::bad_transfer_encoding,
                  "Transfer-Encoding must end with chunked (the body length cannot be determined)");
  if (chunked_before_last)
    return refuse(framing_refusal::bad_transfer_encoding, "Transfer-Encoding applies chunked more than once");
  if (codings > 1)
    return refuse(framing_refusal::unsupported_transfer_coding,
                  "only the chunked transfer coding is implemented");
  return {};
}

}  // namespace

framing_decision check_request_framing(const request_head& head, const framing_limits& limits) noexcept {
  const std::uint64_t line = head.method.size() + 1 + head.target.size() + 1 + http_version_text.size();
  if (line > limits.max_request_line_bytes)
    return refuse(framing_refusal::request_line_too_long, "request line too long");
  if (head.field_count > limits.max_header_fields)
    return refuse(framing_refusal::too_many_header_fields, "too many request header fields");
  if (head.method == "CONNECT")
    return refuse(framing_refusal::connect_not_supported, "CONNECT is not supported");
  framing_decision d = check_target(head.method, head.target);
  if (!d.accepted()) return d;

  if (head.host.count == 0 && head.version >= 11)
    return refuse(framing_refusal::missing_host, "an HTTP/1.1 request must carry a Host header");
  if (head.host.count > 1) return refuse(framing_refusal::bad_host, "more than one Host header");
  if (head.host.count == 1 && !is_host_value(trim_ows(head.host.values[0])))
    return refuse(framing_refusal::bad_host, "invalid Host header");

  if (head.transfer_encoding.count > 0) {
    framing_decision te = check_transfer_encoding(head);
    if (!te.accepted()) return te;
  } else if (head.content_length.count > 0 && !content_length_ok(head.content_length)) {
    return refuse(framing_refusal::bad_content_length, "invalid or conflicting Content-Length");
  }
  return d;
}

unsigned framing_status(framing_refusal r) noexcept {
  switch (r) {
    case framing_refusal::none: return 0;
    case framing_refusal::request_line_too_long: return 414;
    case framing_refusal::too_many_header_fields: return 431;
    case framing_refusal::connect_not_supported: return 405;
    case framing_refusal::unsupported_transfer_coding: return 501;
    case framing_refusal::bad_target:
    case framing_refusal::missing_host:
    case framing_refusal::bad_host:
    case framing_refusal::bad_content_length:
    case framing_refusal::content_length_with_transfer_encoding:
    case framing_refusal::bad_transfer_encoding: return 400;
  }
  return 400;
}

std::string_view to_string(framing_refusal r) noexcept {
  switch (r) {
    case framing_refusal::none: return "none";
    case framing_refusal::request_line_too_long: return "request_line_too_long";
    case framing_refusal::too_many_header_fields: return "too_many_header_fields";
    case framing_refusal::connect_not_supported: return "connect_not_supported";
    case framing_refusal::bad_target: return "bad_target";
    case framing_refusal::missing_host: return "missing_host";
    case framing_refusal::bad_host: return "bad_host";
    case framing_refusal::bad_content_length: return "bad_content_length";
    case framing_refusal::content_length_with_transfer_encoding: return "content_length_with_transfer_encoding";
    case framing_refusal::bad_transfer_encoding: return "bad_transfer_encoding";
    case framing_refusal::unsupported_transfer_coding: return "unsupported_transfer_coding";
  }
  return "unknown";
}

std::size_t body_reserve(std::size_t capacity, std::size_t needed, std::size_t cap) noexcept {
  if (needed <= capacity) return 0;
  const std::size_t small = std::min(small_body_bytes, cap);
  if (needed <= small) return small;
  return std::max(needed, cap);
}

void reserve_body(std::string& body, std::size_t needed, std::size_t cap) {
  const std::size_t want = body_reserve(body.capacity(), needed, cap);
  if (want == 0) return;
  std::string grown;
  grown.reserve(want);  // from the empty string's small buffer: exactly `want`
  grown.append(body);
  body.swap(grown);
}

}  // namespace sluice::http
