// Spans as an OTLP/HTTP JSON ExportTraceServiceRequest (opentelemetry-proto 1.x, the JSON mapping
// of the OTLP specification: trace and span ids as hex strings, 64-bit integers as decimal strings,
// enums as numbers). Pure; thread-safe.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "observability/span.hpp"

namespace sluice::obs {

struct otlp_resource {
  std::string service_name = "sluice";
  std::string service_version;
  std::string service_instance_id;  // this process: host and pid
};

// One resource, one instrumentation scope ("sluice"), the spans in order.
std::string encode_otlp_json(std::span<const span_record> spans, const otlp_resource& resource);

}  // namespace sluice::obs
