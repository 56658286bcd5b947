// proxy::request_ending: the one place a request is logged and counted (finish.cpp). Every request
// a pipeline reads, and every one it could not read, ends here exactly once: one log line and one
// sample of sluice_requests_total with the same route, outcome and reason; its spans go to the
// exporter when it was sampled or failed. Thread-safe (the services are).
#pragma once

#include "proxy/request_context.hpp"
#include "proxy/services.hpp"
#include "runtime/watchdog.hpp"

namespace sluice::proxy {

class request_ending {
 public:
  explicit request_ending(services& svc) : svc_(svc) {}

  void finish(request_context& ctx) noexcept;
  // The share of the traces this gateway starts that are sampled (0 without an exporter).
  double trace_ratio() const noexcept;

 private:
  void export_trace(const request_context& ctx, runtime::steady::time_point end) noexcept;

  services& svc_;
};

}  // namespace sluice::proxy
