#include "proxy/relay/body_usage.hpp"

#include "proxy/relay/event_scan.hpp"

namespace sluice::proxy {

std::optional<reported_usage> usage_of(std::string_view json) noexcept {
  event_facts f;
  if (!scan_event(json, f) || !f.usage_object) return std::nullopt;
  reported_usage u;
  if (f.prompt_tokens >= 0) u.in = static_cast<std::uint64_t>(f.prompt_tokens);
  if (f.input_tokens >= 0) u.in = static_cast<std::uint64_t>(f.input_tokens);
  if (f.completion_tokens >= 0) u.out = static_cast<std::uint64_t>(f.completion_tokens);
  if (f.output_tokens >= 0) u.out = static_cast<std::uint64_t>(f.output_tokens);
  if (u.in + u.out == 0) return std::nullopt;
  return u;
}

void sse_usage_watch::feed(std::string_view bytes) {
  if (stopped_) return;
  auto fed = parser_.feed(bytes, [this](const sse::event_view& e) {
    if (auto u = usage_of(e.data)) usage_ = *u;
  });
  if (!fed) stopped_ = true;
}

}  // namespace sluice::proxy
