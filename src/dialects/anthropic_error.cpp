#include "dialects/anthropic_error.hpp"
#include "dialects/json_fields.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace sluice::dialects {

namespace json = boost::json;

std::string_view error_type_of_status(unsigned status) noexcept {
  switch (status) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 408:
    case 504: return "timeout_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503:
    case 529: return "overloaded_error";
    default: break;
  }
  return status >= 500 ? "api_error" : "invalid_request_error";
}

std::string error_body(std::string_view type, std::string_view message) {
  return json::serialize(json::object{{"type", "error"}, {"error", json::object{{"type", type}, {"message", message}}}});
}

std::string error_body_of_openai(unsigned status, std::string_view openai_body) {
  boost::system::error_code ec;
  const json::value v = json::parse(openai_body, ec);
  const auto* outer = !ec && v.is_object() ? &v.get_object() : nullptr;
  std::string_view message;
  if (const auto* err = object_field(outer, "error")) message = string_field(*err, "message");
  if (message.empty()) message = status >= 500 ? "The upstream failed to answer." : "The request was refused.";
  return error_body(error_type_of_status(status), message);
}

}  // namespace sluice::dialects
