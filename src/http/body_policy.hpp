// body_policy: which requests have their body streamed to the handler instead of read whole
// (ADR 0027). The connection asks it once a request's head is read and its framing checked: a
// request it names is handed to the handler with an empty body, which then reads the body piece by
// piece (connection::read_body_some) under the cap the policy gave. Thread-safe (read-only).
#pragma once

#include <cstdint>

#include "http/types.hpp"

namespace sluice::http {

class body_policy {
 public:
  // The body cap of a request whose body is streamed; 0: read it whole under max-body.
  virtual std::uint64_t streamed_body_cap(const request& head) const noexcept = 0;

 protected:
  ~body_policy() = default;
};

}  // namespace sluice::http
