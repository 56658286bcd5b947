// The one place where a sluice::error becomes an HTTP status and an OpenAI-shaped error body
// {"error":{"message","type","param","code"}}. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "http/types.hpp"

namespace sluice::http {

struct error_mapping {
  unsigned status;
  std::string_view type;  // OpenAI error `type`
  std::string_view code;  // OpenAI error `code` when the error has none of its own
};

error_mapping map_error(const error& e) noexcept;

// {"error":{"message":...,"type":...,"param":...|null,"code":...|null}}
std::string error_body(const error& e);

// The Responses API's in-band `error` event for a stream sluice must end:
// {"type":"error","code":...,"message":...,"param":...,"sequence_number":N,"error":{...}}. The
// top-level members are the Responses contract; the nested `error` object (the same one
// error_body writes) is what the official SDKs raise on in any event.
std::string responses_error_event(const error& e, std::int64_t sequence_number);

// A complete JSON error response; `keep_alive` false adds Connection: close.
response make_error_response(const error& e, unsigned version, bool keep_alive);

}  // namespace sluice::http
