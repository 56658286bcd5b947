// x-request-id: keep a sane client-supplied id, otherwise generate one. Thread-safe (thread-local RNG).
#pragma once

#include <string>
#include <string_view>

namespace sluice::proxy {

// 1-128 characters of [A-Za-z0-9._:-]; anything else is replaced, never echoed.
bool is_sane_request_id(std::string_view id) noexcept;
// 32 lowercase hex characters from a per-thread random generator.
std::string generate_request_id();

}  // namespace sluice::proxy
