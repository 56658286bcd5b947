#include "http/error_response.hpp"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

namespace sluice::http {

error_mapping map_error(const error& e) noexcept {
  switch (e.code) {
    case errc::bad_request: return {400, "invalid_request_error", ""};
    case errc::unauthorized: return {401, "invalid_request_error", "invalid_api_key"};
    case errc::not_found: return {404, "invalid_request_error", "not_found"};
    case errc::method_not_allowed: return {405, "invalid_request_error", "method_not_allowed"};
    case errc::request_timeout: return {408, "invalid_request_error", "request_timeout"};
    case errc::payload_too_large: return {413, "invalid_request_error", "request_too_large"};
    case errc::header_too_large: return {431, "invalid_request_error", "request_header_too_large"};
    case errc::uri_too_long: return {414, "invalid_request_error", "request_line_too_long"};
    case errc::not_implemented: return {501, "invalid_request_error", "not_implemented"};
    case errc::rate_limited: return {429, "rate_limit_error", "rate_limit_exceeded"};
    case errc::overloaded: return {503, "overloaded", "server_overloaded"};
    case errc::upstream_connect: return {502, "upstream_error", "upstream_unreachable"};
    case errc::upstream_timeout: return {504, "upstream_error", "upstream_timeout"};
    case errc::upstream_status: {
      unsigned s = e.upstream_status >= 400 && e.upstream_status <= 599 ? static_cast<unsigned>(e.upstream_status) : 502;
      return {s, s >= 500 ? "upstream_error" : "invalid_request_error", "upstream_error"};
    }
    case errc::upstream_protocol: return {502, "upstream_error", "upstream_protocol_error"};
    case errc::upstream_auth: return {502, "upstream_error", "upstream_auth_failed"};
    case errc::cancelled: return {503, "overloaded", "request_cancelled"};
    case errc::internal: return {500, "server_error", "internal_error"};
  }
  return {500, "server_error", "internal_error"};
}

namespace {

boost::json::object error_object(const error& e) {
  auto m = map_error(e);
  boost::json::object inner;
  inner["message"] = e.message;
  inner["type"] = m.type;
  if (e.param.empty()) inner["param"] = nullptr; else inner["param"] = e.param;
  if (!e.api_code.empty()) inner["code"] = e.api_code;
  else if (!m.code.empty()) inner["code"] = m.code;
  else inner["code"] = nullptr;
  return inner;
}

}  // namespace

std::string error_body(const error& e) {
  boost::json::object outer;
  outer["error"] = error_object(e);
  return boost::json::serialize(outer);
}

std::string responses_error_event(const error& e, std::int64_t sequence_number) {
  boost::json::object inner = error_object(e);
  boost::json::object ev;
  ev["type"] = "error";
  ev["code"] = inner["code"];
  ev["message"] = inner["message"];
  ev["param"] = inner["param"];
  ev["sequence_number"] = sequence_number;
  ev["error"] = std::move(inner);
  return boost::json::serialize(ev);
}

response make_error_response(const error& e, unsigned version, bool keep_alive) {
  response res{static_cast<bhttp::status>(map_error(e).status), version};
  res.set(bhttp::field::content_type, "application/json");
  res.body() = error_body(e);
  res.keep_alive(keep_alive);
  res.prepare_payload();
  return res;
}

}  // namespace sluice::http
