// The relay's one view of a request's trace (proxy::request_trace implements it).
#pragma once

#include <string_view>

namespace sluice::proxy {

// Told a stream's first event payload, once: a sampled request's trace reads the upstream's
// response id and model from it (request_trace).
class stream_identity {
 public:
  virtual void identify(std::string_view first_payload) = 0;

 protected:
  ~stream_identity() = default;
};

}  // namespace sluice::proxy
