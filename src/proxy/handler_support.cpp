#include "proxy/handler_support.hpp"

#include <cctype>

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>

#include "http/error_response.hpp"

namespace sluice::proxy::detail {

namespace json = boost::json;

bool starts_with_ci(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  return true;
}

// Client headers worth passing on: OpenAI's own and custom x- headers, never hop-by-hop ones, never
// the client's credentials when sluice holds the upstream key, never sluice's own controls.
bool forwardable(std::string_view name) {
  if (starts_with_ci(name, "x-sluice-") || starts_with_ci(name, "x-request-id") || starts_with_ci(name, "x-forwarded-"))
    return false;
  return starts_with_ci(name, "openai-") || starts_with_ci(name, "x-");
}

// Upstream response headers worth passing back to the client.
bool passback(std::string_view name) {
  return starts_with_ci(name, "x-ratelimit-") || starts_with_ci(name, "retry-after") ||
         starts_with_ci(name, "openai-");
}

// A non-2xx upstream body becomes the client's error body: kept when already OpenAI-shaped.
std::string upstream_error_body(unsigned status, const std::string& body) {
  unsigned char stack[4096];
  json::monotonic_resource mr(stack, sizeof stack);
  error_code ec;
  json::value v = json::parse(body, ec, &mr);
  if (!ec && v.is_object() && v.get_object().contains("error") && v.get_object().at("error").is_object()) return body;
  error e = error::make(errc::upstream_status, "upstream returned HTTP " + std::to_string(status));
  e.upstream_status = static_cast<int>(status);
  return http::error_body(e);
}

double seconds_since(runtime::steady::time_point t) {
  return std::chrono::duration<double>(runtime::steady::now() - t).count();
}

obs::outcome outcome_of_status(unsigned status) {
  if (status / 100 == 2) return obs::outcome::ok;
  if (status == 408 || status == 504) return obs::outcome::timeout;
  if (status / 100 == 4) return obs::outcome::client_error;
  return obs::outcome::upstream_error;
}

obs::reject_reason reason_of(admission::refusal r) {
  switch (r) {
    case admission::refusal::queue_full: return obs::reject_reason::queue_full;
    case admission::refusal::queue_timeout: return obs::reject_reason::queue_timeout;
    case admission::refusal::memory: return obs::reject_reason::memory;
    case admission::refusal::draining: return obs::reject_reason::draining;
    case admission::refusal::cancelled: return obs::reject_reason::queue_timeout;
  }
  return obs::reject_reason::queue_full;
}

}  // namespace sluice::proxy::detail
