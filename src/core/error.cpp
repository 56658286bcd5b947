#include "core/error.hpp"

namespace sluice {

std::string_view to_string(errc c) noexcept {
  switch (c) {
    case errc::bad_request: return "bad_request";
    case errc::unauthorized: return "unauthorized";
    case errc::not_found: return "not_found";
    case errc::method_not_allowed: return "method_not_allowed";
    case errc::request_timeout: return "request_timeout";
    case errc::payload_too_large: return "payload_too_large";
    case errc::header_too_large: return "header_too_large";
    case errc::uri_too_long: return "uri_too_long";
    case errc::not_implemented: return "not_implemented";
    case errc::rate_limited: return "rate_limited";
    case errc::overloaded: return "overloaded";
    case errc::upstream_connect: return "upstream_connect";
    case errc::upstream_timeout: return "upstream_timeout";
    case errc::upstream_status: return "upstream_status";
    case errc::upstream_protocol: return "upstream_protocol";
    case errc::upstream_auth: return "upstream_auth_failed";
    case errc::cancelled: return "cancelled";
    case errc::internal: return "internal";
  }
  return "internal";
}

}  // namespace sluice
