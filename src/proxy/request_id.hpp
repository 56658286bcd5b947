// x-request-id: keep a sane client-supplied id, otherwise generate one. Thread-safe (thread-local RNG).
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

}  // namespace sluice::proxy
