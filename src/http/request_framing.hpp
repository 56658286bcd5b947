// request_framing: the HTTP/1.1 framing rules (RFC 9112) a parsed request head must pass before its
// body is read: request-line length and field count limits, the request-target form, Host, and
// Transfer-Encoding / Content-Length. Pure and Asio-free (std only), so that unit tests and a
// fuzzer can drive it; thread-safe. Views in the result point into the caller's head.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace sluice::http {

// Beast 1.81's chunked parser asserts in debug builds (BOOST_ASSERT, an abort) when a body's first
// chunk is the final one, was put as exactly "0\r\n", and the next put brings four bytes
// (boostorg/beast#2861, fixed in Boost 1.86; release builds handle it). A client controls that
// split. No chunked body can end in fewer than five bytes ("0\r\n\r\n"), so the reader puts body
// bytes of a chunked request only once at least five are buffered: nothing is lost by waiting.
inline constexpr std::size_t chunked_put_min_bytes = 5;
constexpr bool hold_body_bytes(bool chunked, std::size_t buffered) noexcept {
  return buffered == 0 || (chunked && buffered < chunked_put_min_bytes);
}

// The values of every line of one field name, in order. Keeps the first `capacity`; `count` is the
// number of lines seen (a request with more is refused: no honest client sends 5 Host lines).
struct field_lines {
  static constexpr std::size_t capacity = 4;
  std::array<std::string_view, capacity> values{};
  std::size_t count = 0;

  void add(std::string_view v) noexcept {
    if (count < capacity) values[count] = v;
    ++count;
  }
  std::span<const std::string_view> kept() const noexcept { return {values.data(), std::min(count, capacity)}; }
};

// What of a parsed head the framing rules look at. `version` is 10 or 11 (major*10+minor).
struct request_head {
  std::string_view method;  // as sent, e.g. "POST"
  std::string_view target;  // as sent
  unsigned version = 11;
  std::size_t field_count = 0;  // every field line, of any name
  field_lines host;
  field_lines content_length;
  field_lines transfer_encoding;
};

struct framing_limits {
  std::uint64_t max_request_line_bytes = 8 * 1024;  // "METHOD SP target SP HTTP/1.1", without CRLF
  std::uint64_t max_header_fields = 100;
};

// Why a head was refused. Each has a fixed status (framing_status) and close is always true: after a
// framing error the rest of the connection's bytes cannot be trusted to start a request.
enum class framing_refusal : std::uint8_t {
  none,
  request_line_too_long,        // 414
  too_many_header_fields,       // 431
  connect_not_supported,        // 405: CONNECT (sluice is not a tunnel)
  bad_target,                   // 400: authority-form outside CONNECT, asterisk-form outside OPTIONS,
                                //      an absolute-form that is not http(s)://authority[/path]
  missing_host,                 // 400: HTTP/1.1 without Host
  bad_host,                     // 400: more than one Host line, or a value that is no host[:port]
  bad_content_length,           // 400: not a decimal number, or lines/list items that differ
  content_length_with_transfer_encoding,  // 400: both (RFC 9112 6.3: a smuggling vector)
  bad_transfer_encoding,        // 400: codings whose last is not `chunked` (the body length cannot
                                //      be known), chunked twice, an empty or malformed list,
                                //      Transfer-Encoding in an HTTP/1.0 request
  unsupported_transfer_coding,  // 501: a well-formed list ending in chunked with another coding
                                //      before it (gzip, chunked): sluice decodes only chunked
};

struct framing_decision {
  framing_refusal refusal = framing_refusal::none;
  std::string_view message;  // for the client (static text) when refused
  // When accepted: the target to route, in origin-form ("/path?query"); for an absolute-form target
  // its path and query (RFC 9112 3.2.2), "/" when it has none. A view into head.target.
  std::string_view origin_target;

  bool accepted() const noexcept { return refusal == framing_refusal::none; }
};

// The verdict on one request head. Checked in this order: request-line length, field count,
// method and target form, Host, then body framing.
framing_decision check_request_framing(const request_head& head, const framing_limits& limits) noexcept;

// The HTTP status of a refusal (0 for none).
unsigned framing_status(framing_refusal r) noexcept;
// Its name (snake_case, as written above), for logs and tests.
std::string_view to_string(framing_refusal r) noexcept;

// The capacity to reserve for a body being read into a string before `needed` bytes are in it,
// given its `capacity` now and the body limit `cap` (needed <= cap: the parser refuses a chunk that
// would pass the limit before any of it is stored). 0 = the capacity suffices. Small bodies get a
// small buffer; anything larger jumps to the cap in one step, so a body never holds more than
// the cap, and a growth step never holds a large old buffer beside the new one (doubling past the
// cap's half held 1.5-2x the cap). Pure.
std::size_t body_reserve(std::size_t capacity, std::size_t needed, std::size_t cap) noexcept;
inline constexpr std::size_t small_body_bytes = 64 * 1024;
// Makes room in `body` for `needed` bytes under body_reserve, to exactly the capacity it returns
// (std::string::reserve grows to at least twice the old capacity, which would pass the cap).
void reserve_body(std::string& body, std::size_t needed, std::size_t cap);

}  // namespace sluice::http
