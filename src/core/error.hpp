// sluice::error and result<T>: errors as values at module boundaries, classified by where they came
// from and whether a retry could help. Plain value types; safe to copy across threads.
#pragma once

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace sluice {

// What went wrong, in terms the HTTP layer can map to a status in exactly one place
// (proxy/error_response.cpp).
enum class errc {
  bad_request,        // malformed or wrongly typed client input -> 400
  unauthorized,       // missing or unknown client key -> 401
  not_found,          // unknown route or model -> 404
  method_not_allowed, // -> 405
  request_timeout,    // client too slow sending the request -> 408
  payload_too_large,  // body over the limit -> 413
  header_too_large,   // request head over the limit, or too many fields -> 431
  uri_too_long,       // request line over the limit -> 414
  not_implemented,    // a request framing sluice does not implement (a transfer coding) -> 501
  rate_limited,       // a per-key limit -> 429
  overloaded,         // shed by admission or memory budget -> 503
  upstream_connect,   // could not reach the upstream (DNS, TCP, TLS) -> 502
  upstream_timeout,   // upstream exceeded a phase deadline -> 504
  upstream_status,    // upstream answered non-2xx; status carried alongside -> that status
  upstream_protocol,  // upstream sent malformed HTTP or SSE -> 502
  upstream_auth,      // the upstream refused the gateway's own key (401/403) -> 502 upstream_auth_failed
  cancelled,          // the client went away or the gateway is draining
  internal,           // a bug: caught at the session boundary -> 500
};

std::string_view to_string(errc c) noexcept;

struct error {
  errc code = errc::internal;
  std::string message;      // safe to show to a client: never contains secrets
  std::string param = {};   // OpenAI `param`: the offending field, if any
  int upstream_status = 0;  // for errc::upstream_status
  bool retryable = false;   // could the same request succeed elsewhere or later?
  std::string api_code = {};  // OpenAI `code` (e.g. "invalid_api_key"); empty -> derived from `code`

  static error make(errc c, std::string msg, std::string param = {}) {
    return error{c, std::move(msg), std::move(param), 0, false, {}};
  }
};

// A minimal expected-like type (std::expected is C++23). Holds either a T or an error.
template <class T>
class [[nodiscard]] result {
 public:
  result(T v) : v_(std::in_place_index<0>, std::move(v)) {}          // NOLINT: implicit by design
  result(error e) : v_(std::in_place_index<1>, std::move(e)) {}      // NOLINT: implicit by design

  bool has_value() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }

  T& value() & { assert(has_value()); return std::get<0>(v_); }
  const T& value() const& { assert(has_value()); return std::get<0>(v_); }
  T&& value() && { assert(has_value()); return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const error& err() const& { assert(!has_value()); return std::get<1>(v_); }
  error&& err() && { assert(!has_value()); return std::get<1>(std::move(v_)); }

 private:
  std::variant<T, error> v_;
};

// result<void>: success carries nothing.
struct ok_t {};
inline constexpr ok_t ok{};
template <>
class [[nodiscard]] result<void> {
 public:
  result(ok_t) {}                                     // NOLINT
  result(error e) : e_(std::move(e)), has_(false) {}  // NOLINT
  bool has_value() const noexcept { return has_; }
  explicit operator bool() const noexcept { return has_; }
  const error& err() const& { assert(!has_); return e_; }
  error&& err() && { assert(!has_); return std::move(e_); }

 private:
  error e_;
  bool has_ = true;
};

}  // namespace sluice
