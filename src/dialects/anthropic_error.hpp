// The Messages API's error shape: {"type":"error","error":{"type":...,"message":...}}, and the error
// type Anthropic's API gives each HTTP status (docs/dialects.md). Pure.
#pragma once

#include <boost/json/object.hpp>
#include <string>
#include <string_view>

namespace sluice::dialects {

// invalid_request_error (400, 405, 409, 422 and any other 4xx), authentication_error (401),
// permission_error (403), not_found_error (404), request_too_large (413), rate_limit_error (429),
// timeout_error (408, 504), overloaded_error (503, 529), api_error (any other 5xx).
std::string_view error_type_of_status(unsigned status) noexcept;

// {"type":"error","error":{"type":type,"message":message}}
std::string error_body(std::string_view type, std::string_view message);

// An OpenAI-shaped error body ({"error":{"message":...}}) as the Messages API's, for `status`: its
// message kept, its type the status's. A body that is not such an error keeps no text of it (it
// may be an upstream's page): the message then says only what the status means.
std::string error_body_of_openai(unsigned status, std::string_view openai_body);

}  // namespace sluice::dialects
