// What a Redis command ends with: a named outcome and, when the server answered, its reply.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "redis/reply.hpp"

namespace sluice::redis {

enum class outcome : std::uint8_t {
  ok,              // the server answered (any reply but an error)
  error_reply,     // the server answered with an error (the reply holds its message)
  timeout,         // no answer within the command's deadline
  disconnected,    // not connected, or the connection dropped before the answer
  overloaded,      // the connection's in-flight bound was full: refused at once, nothing queued
  protocol_error,  // the server's bytes were not RESP (the connection is remade)
  cancelled,       // the caller's coroutine was cancelled while waiting
};
inline constexpr std::size_t outcome_count = 7;
inline constexpr std::array all_outcomes = {outcome::ok,         outcome::error_reply,    outcome::timeout,
                                            outcome::disconnected, outcome::overloaded, outcome::protocol_error,
                                            outcome::cancelled};
std::string_view to_string(outcome o) noexcept;

struct response {
  outcome status = outcome::disconnected;
  reply value;  // the reply for ok and error_reply; nil otherwise

  bool ok() const noexcept { return status == outcome::ok; }
};

}  // namespace sluice::redis
