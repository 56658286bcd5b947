#include "observability/otlp_json.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <iterator>

#include "observability/log_format.hpp"

namespace sluice::obs {
namespace {

// An integer in decimal, straight into the output (no formatting library on the per-span path).
template <class Int>
void append_int(std::string& out, Int v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

// An id's hex digits, written in place.
template <class Id>
void append_hex(std::string& out, const Id& id) {
  const std::size_t at = out.size();
  out.resize(at + id.bytes.size() * 2);
  id.write_hex(out.data() + at);
}

void append_attribute_value(std::string& out, const span_attribute& a) {
  std::visit(
      [&out](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          out += "{\"stringValue\":";
          detail::append_json_quoted(out, v);
          out += '}';
        } else if constexpr (std::is_same_v<T, bool>) {
          out += v ? "{\"boolValue\":true}" : "{\"boolValue\":false}";
        } else if constexpr (std::is_same_v<T, std::int64_t>) {
          out += "{\"intValue\":\"";
          append_int(out, v);
          out += "\"}";
        } else if (std::isfinite(v)) {
          fmt::format_to(std::back_inserter(out), "{{\"doubleValue\":{}}}", v);
        } else {
          out += "{\"stringValue\":\"NaN\"}";  // JSON has no NaN or infinity
        }
      },
      a.value);
}

void append_attributes(std::string& out, const std::vector<span_attribute>& attrs) {
  out += "\"attributes\":[";
  for (std::size_t i = 0; i < attrs.size(); ++i) {
    if (i) out += ',';
    out += "{\"key\":";
    detail::append_json_quoted(out, attrs[i].key);
    out += ",\"value\":";
    append_attribute_value(out, attrs[i]);
    out += '}';
  }
  out += ']';
}

void append_span(std::string& out, const span_record& s) {
  out += "{\"traceId\":\"";
  append_hex(out, s.trace);
  out += "\",\"spanId\":\"";
  append_hex(out, s.id);
  out += '"';
  if (s.parent.valid()) {
    out += ",\"parentSpanId\":\"";
    append_hex(out, s.parent);
    out += '"';
  }
  if (!s.trace_state.empty()) {
    out += ",\"traceState\":";
    detail::append_json_quoted(out, s.trace_state);
  }
  out += ",\"name\":";
  detail::append_json_quoted(out, s.name);
  out += ",\"kind\":";
  append_int(out, static_cast<int>(s.kind));
  out += ",\"startTimeUnixNano\":\"";
  append_int(out, s.start_unix_ns);
  out += "\",\"endTimeUnixNano\":\"";
  append_int(out, s.end_unix_ns);
  out += "\",";
  append_attributes(out, s.attributes);
  if (s.error) {
    out += ",\"status\":{\"code\":2,\"message\":";
    detail::append_json_quoted(out, s.status_message);
    out += '}';
  }
  out += '}';
}

}  // namespace

std::string encode_otlp_json(std::span<const span_record> spans, const otlp_resource& resource) {
  std::string out;
  out.reserve(256 + spans.size() * 768);
  std::vector<span_attribute> res{{"service.name", resource.service_name}};
  if (!resource.service_version.empty()) res.push_back({"service.version", resource.service_version});
  if (!resource.service_instance_id.empty()) res.push_back({"service.instance.id", resource.service_instance_id});
  out += "{\"resourceSpans\":[{\"resource\":{";
  append_attributes(out, res);
  out += "},\"scopeSpans\":[{\"scope\":{\"name\":\"sluice\"";
  if (!resource.service_version.empty()) {
    out += ",\"version\":";
    detail::append_json_quoted(out, resource.service_version);
  }
  out += "},\"spans\":[";
  for (std::size_t i = 0; i < spans.size(); ++i) {
    if (i) out += ',';
    append_span(out, spans[i]);
  }
  out += "]}]}]}";
  return out;
}

}  // namespace sluice::obs
