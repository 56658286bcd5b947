// event_scan: what the relay needs to know about one streamed event's JSON payload (is it a JSON
// object, does it carry choices, usage, an error, a Responses API type), read in one pass without
// building a DOM. The relay scans every event it forwards, so this is on the per-chunk path; the
// structured-output check, which needs the values, still parses. Two readers lie behind it (ADR
// 0032): a skim that checks the grammar and steps over what no fact is read from, and boost::json's
// validating SAX parser for every event the skim is not sure of.
#pragma once

#include <cstdint>
#include <string_view>

namespace sluice::proxy {

struct event_facts {
  bool choices_array = false;     // a top-level "choices" that is an array
  std::uint32_t choices = 0;      // its element count
  bool usage_object = false;      // a top-level "usage" (or, without one, "response.usage") that is an object
  bool has_error = false;         // a top-level "error" member
  // Token counts inside "usage", -1 when absent or not an integer. Chat chunks carry a top-level
  // usage; Responses API events carry it in the response object ("response.usage"); a top-level
  // usage object wins when an event has both.
  std::int64_t completion_tokens = -1, prompt_tokens = -1, output_tokens = -1, input_tokens = -1;
  // The top-level "sequence_number" (Responses API events), -1 when absent or not an integer.
  std::int64_t sequence_number = -1;
  // A top-level "response" member whose value is an object (a Responses API lifecycle event:
  // response.created, .in_progress, .completed, ...), whatever whitespace the JSON has.
  bool response_object = false;
  // Where the value of that object's "id" string lies in the payload ([at, at + size)), when it is
  // written there as it is (no escapes): a lifecycle event's response id can then be replaced
  // without re-serializing the event. found == false otherwise.
  struct span {
    bool found = false;
    std::size_t at = 0, size = 0;
  } response_id;
  // The top-level "type" string (Responses API events), when it is one of these. text_delta is an
  // event that carries generated output: response.output_text.delta, response.refusal.delta and
  // response.function_call_arguments.delta.
  enum class type_kind : std::uint8_t { none, completed, incomplete, failed, error, text_delta } type = type_kind::none;
};

// Scans `payload` (the event's data). False when it is not a single, well-formed JSON object.
bool scan_event(std::string_view payload, event_facts& out);

namespace detail {
// The two readers, apart, for their tests and benchmark. The skim says `object` only for a
// payload it has read whole and found a well-formed object, with the facts the SAX scan would
// read; `unsure` for anything else (malformed input among it).
enum class skim_verdict : std::uint8_t { object, unsure };
skim_verdict skim_event(std::string_view payload, event_facts& out) noexcept;
bool scan_event_sax(std::string_view payload, event_facts& out);
}  // namespace detail

}  // namespace sluice::proxy
