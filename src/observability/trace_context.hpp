// W3C Trace Context (https://www.w3.org/TR/trace-context/, level 1): the ids of a trace and a span,
// the `traceparent` header's parse and format, `tracestate` kept as it came when it is well-formed,
// and random ids. Pure apart from the per-thread random generator; thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::obs {

struct trace_id {
  std::array<std::uint8_t, 16> bytes{};
  bool valid() const noexcept;  // not all zero
  std::string hex() const;      // 32 lowercase hex digits
  void write_hex(char* out) const noexcept;  // the same into out[0, 32)
  friend bool operator==(const trace_id&, const trace_id&) = default;
};

struct span_id {
  std::array<std::uint8_t, 8> bytes{};
  bool valid() const noexcept;  // not all zero
  std::string hex() const;      // 16 lowercase hex digits
  void write_hex(char* out) const noexcept;  // the same into out[0, 16)
  friend bool operator==(const span_id&, const span_id&) = default;
};

// A `traceparent` header: the trace, the caller's span (our parent) and the sampled flag.
struct trace_parent {
  trace_id trace;
  span_id parent;
  bool sampled = false;
};

// `00-<32 hex>-<16 hex>-<2 hex>` (and, as the spec asks, a higher version's first four fields,
// anything after them ignored). Lowercase hex only; all-zero ids, version ff and a version-00
// header of another length are refused (nullopt: the caller starts a new trace).
std::optional<trace_parent> parse_traceparent(std::string_view header) noexcept;

// `00-<trace>-<span>-01` or `-00`.
std::string format_traceparent(const trace_id& trace, const span_id& span, bool sampled);

// A `tracestate` worth passing on: at most 512 bytes of printable ASCII, at most 32 comma-separated
// members each with a '='. Anything else is dropped (the spec lets a vendor drop a malformed one).
bool acceptable_tracestate(std::string_view header) noexcept;

// Fresh random ids from a per-thread generator seeded from the system's random source (never zero).
trace_id new_trace_id() noexcept;
span_id new_span_id() noexcept;

// The sampling decision for a trace sluice starts: the trace id's last 8 bytes read as a number,
// below ratio * 2^64 (so every process decides the same for the same trace). 0 never, 1 always.
bool sampled_by_ratio(const trace_id& trace, double ratio) noexcept;

}  // namespace sluice::obs
