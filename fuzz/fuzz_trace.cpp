// Traces (observability/trace_context.hpp, otlp_json.hpp): any header text either is refused as a
// traceparent or parses into one that formats and parses back to the same ids and flag (a version-00
// header formats back to itself); any text as a span's name, attribute, status and tracestate
// encodes into OTLP JSON that parses, with one span whose ids are the ones given.
#include <boost/json.hpp>

#include "fuzz_util.hpp"
#include "observability/otlp_json.hpp"
#include "observability/trace_context.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace sluice::obs;
  using sluice::fuzz::require;
  const std::string_view text = sluice::fuzz::as_text(data, size);
  if (auto p = parse_traceparent(text)) {
    const std::string again = format_traceparent(p->trace, p->parent, p->sampled);
    auto q = parse_traceparent(again);
    require(q && q->trace == p->trace && q->parent == p->parent && q->sampled == p->sampled, "a traceparent round-trips");
    if (text.starts_with("00-") && (text[54] == '0' || text[54] == '1') && text[53] == '0')
      require(again == text, "a version-00 header with flags 00 or 01 formats back to itself");
  }
  span_record s;
  s.trace = new_trace_id();
  s.id = new_span_id();
  s.parent = new_span_id();
  s.name = std::string(text);
  s.trace_state = std::string(text);
  s.error = true;
  s.status_message = std::string(text);
  s.attributes = {{"a", std::string(text)}, {"n", std::int64_t(size)}, {"d", double(size) / 3}, {"b", true}};
  const std::string body = encode_otlp_json({&s, 1}, {std::string(text), "1.0", "host:1"});
  boost::system::error_code ec;
  auto v = boost::json::parse(body, ec);
  require(!ec, "the OTLP JSON parses");
  const auto& span = v.at("resourceSpans").at(0).at("scopeSpans").at(0).at("spans").at(0);
  require(span.at("traceId").as_string() == s.trace.hex() && span.at("spanId").as_string() == s.id.hex() &&
              span.at("parentSpanId").as_string() == s.parent.hex(),
          "the ids are the span's");
  return 0;
}
