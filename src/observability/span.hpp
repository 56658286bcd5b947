// One finished span as the exporter sends it: ids, name, kind, times, status, attributes. A plain
// value: built by the request's owner when the request ends, moved into the exporter's queue.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "observability/trace_context.hpp"

namespace sluice::obs {

enum class span_kind : std::uint8_t { internal = 1, server = 2, client = 3 };  // OTLP's numbers

struct span_attribute {
  std::string_view key;  // a semantic-conventions name (gen_ai.request.model, ...): a literal, never user input
  std::variant<std::string, std::int64_t, double, bool> value;
};

struct span_record {
  trace_id trace;
  span_id id;
  span_id parent;  // all zero: a root span
  std::string name;
  span_kind kind = span_kind::internal;
  std::uint64_t start_unix_ns = 0;
  std::uint64_t end_unix_ns = 0;
  bool error = false;          // OTLP status ERROR; otherwise UNSET (the spec's default for success)
  std::string status_message;  // with error: why
  std::string trace_state;     // the tracestate the trace came with ("" when none)
  std::vector<span_attribute> attributes;
};

}  // namespace sluice::obs
