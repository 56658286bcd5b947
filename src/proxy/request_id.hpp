// The ids the gateway makes: x-request-id (keep a sane client-supplied id, otherwise generate one;
// thread-local RNG), and the ids a client can use later (responses, completions, messages: 128 bits
// from the system's CSPRNG, docs/security.md). Thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace sluice::proxy {

// 1-128 characters of [A-Za-z0-9._:-]; anything else is replaced, never echoed.
bool is_sane_request_id(std::string_view id) noexcept;
// 32 lowercase hex characters from a per-thread random generator.
std::string generate_request_id();
// `id` when it is sane, else a generated one.
std::string request_id_or_new(std::string_view id);
// The request's x-request-id when it is sane, else a generated one.
template <class Request>
std::string request_id_of(const Request& req) {
  auto it = req.find("x-request-id");
  return request_id_or_new(it == req.end() ? std::string_view{} : std::string_view(it->value()));
}

// A new response id: "resp_" and 32 hex digits from the system's CSPRNG (an id is the only key
// to a response when no client keys are configured).
std::string new_response_id();
// An id of new_response_id()'s shape: the only ids the gateway stores responses under.
bool is_gateway_response_id(std::string_view id) noexcept;
// `prefix` and 32 hex digits from the system's CSPRNG.
std::string new_random_id(std::string_view prefix);

}  // namespace sluice::proxy
