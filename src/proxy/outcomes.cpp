#include "proxy/outcomes.hpp"

#include "http/error_response.hpp"

namespace sluice::proxy {

obs::outcome outcome_of_status(unsigned status) noexcept {
  if (status / 100 == 2) return obs::outcome::ok;
  if (status == 408 || status == 504) return obs::outcome::timeout;
  if (status / 100 == 4) return obs::outcome::client_error;
  return obs::outcome::upstream_error;
}

obs::outcome outcome_of_error(const error& e) noexcept {
  if (e.code == errc::internal) return obs::outcome::internal;
  return outcome_of_status(http::map_error(e).status);
}

obs::outcome outcome_of_stream_failure(const error& e) noexcept {
  if (e.code == errc::upstream_timeout) return obs::outcome::timeout;
  if (e.code == errc::internal) return obs::outcome::internal;
  return obs::outcome::upstream_error;
}

std::string_view reason_of(const error& e) noexcept {
  // api_code is set by sluice from a fixed set of literals (never from client or upstream text).
  if (e.api_code == "model_not_found") return "model_not_found";
  if (e.api_code == "schema_violation") return "schema_violation";
  if (e.api_code == "upstream_auth_failed") return "upstream_auth_failed";
  return to_string(e.code);
}

bool should_retry_value(unsigned status, const error* e) noexcept {
  if (e) {
    switch (e->code) {
      case errc::bad_request:
      case errc::unauthorized:
      case errc::not_found:
      case errc::method_not_allowed:
      case errc::payload_too_large:
      case errc::header_too_large:
      case errc::uri_too_long:
      case errc::not_implemented:
      case errc::upstream_auth: return false;
      case errc::upstream_protocol: return e->api_code != "schema_violation";
      case errc::request_timeout:
      case errc::rate_limited:
      case errc::overloaded:
      case errc::upstream_connect:
      case errc::upstream_timeout:
      case errc::cancelled:
      case errc::internal: return true;
      case errc::upstream_status: break;  // by the upstream's status
    }
  }
  return status == 408 || status == 409 || status == 429 || status >= 500;
}

obs::reject_reason reject_reason_of(admission::refusal r) noexcept {
  switch (r) {
    case admission::refusal::queue_full: return obs::reject_reason::queue_full;
    case admission::refusal::key_queue_full: return obs::reject_reason::key_queue_full;
    case admission::refusal::queue_timeout: return obs::reject_reason::queue_timeout;
    case admission::refusal::memory: return obs::reject_reason::memory;
    case admission::refusal::draining: return obs::reject_reason::draining;
    case admission::refusal::cancelled: return obs::reject_reason::queue_timeout;
  }
  return obs::reject_reason::queue_full;
}

error admission_error(admission::refusal r) {
  switch (r) {
    case admission::refusal::queue_full:
      return error::make(errc::overloaded, "The gateway is at capacity and its queue is full; retry later.");
    case admission::refusal::key_queue_full:
      return error::make(errc::overloaded,
                         "The gateway is at capacity and this key already has its share of the queue waiting; "
                         "retry later.");
    case admission::refusal::queue_timeout:
      return error::make(errc::overloaded, "The gateway is at capacity; the request waited too long in the queue.");
    case admission::refusal::memory:
      return error::make(errc::overloaded, "The gateway is near its memory budget; retry shortly.");
    case admission::refusal::draining:
    case admission::refusal::cancelled: break;
  }
  return error::make(errc::overloaded, "The gateway cannot take this request now; retry later.");
}

}  // namespace sluice::proxy
