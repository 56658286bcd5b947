// Structured outputs in the request path: the schema policy, the schema a request asks for, and the
// checks of the model's output against it — a whole answer, or a stream fed event by event.
// Pure logic, no I/O. schema_options is a frozen value after start-up; a stream_check belongs to one
// stream on one thread; everything else is stateless and thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

#include "core/error.hpp"
#include "core/units.hpp"
#include "proxy/api.hpp"
#include "proxy/structured/schema_requests.hpp"
#include "schema/cache.hpp"
#include "schema/stream_validator.hpp"

namespace sluice::config {
class option_table;
}
namespace sluice::obs {
class metrics_registry;
}

namespace sluice::proxy {

// What sluice does with an output that breaks its schema (docs/schema.md, "Structured outputs in
// the gateway"). `retry` asks the upstream again on whole answers; on streams it acts as `reject`.
enum class schema_policy { annotate, reject, retry };
result<schema_policy> parse_schema_policy(std::string_view text);
std::string_view to_string(schema_policy p) noexcept;

// Request and response headers.
inline constexpr std::string_view schema_policy_header = "x-sluice-schema-policy";  // per-request policy
inline constexpr std::string_view schema_events_header = "x-sluice-schema-events";  // "1"/"true": stream verdict event
inline constexpr std::string_view schema_verdict_header = "x-sluice-schema";        // annotate, whole answers
inline constexpr std::string_view schema_attempts_header = "x-sluice-schema-attempts";  // retry, whole answers
// The SSE event type of the stream verdict.
inline constexpr std::string_view schema_event_type = "sluice.schema";

// Config keys `schema-*`.
struct schema_options {
  schema_policy policy = schema_policy::annotate;
  std::uint64_t retries = 2;                      // extra upstream attempts under `retry`
  std::uint64_t max_choices = 16;                 // most choices (`n`) checked per request; more is a 400
  std::uint64_t cache_entries = 1000;
  std::uint64_t cache_bytes = 64 * 1024 * 1024;
  duration cache_ttl{0};                          // 0: entries never expire
  // The limits OpenAI documents for a strict schema, applied to response and tool schemas alike
  // (schema::compile_limits; docs/schema.md, "Limits").
  std::uint64_t max_depth = 10;                   // nesting levels, counted through $ref targets
  std::uint64_t max_properties = 5000;            // object property names, in total
  std::uint64_t max_enum_values = 1000;           // enum values, in total
  std::uint64_t max_total_chars = 120000;         // characters of property/definition names, enum/const strings

  void register_options(config::option_table& t);
  result<void> validate() const;
  schema::compile_limits compile_limits() const;
  schema::cache_options cache_options() const;    // limits included: the cache compiles every schema
};

// Bounds of schema-max-choices: a stream keeps one incremental validator per choice index.
inline constexpr std::uint64_t max_checked_choices = 128;

// The json_schema format of a parsed request body: chat and legacy completions `response_format`
// (OpenAI's completions API has none, vLLM's accepts it), responses `text.format`. nullopt when
// none is asked for (no format, "text", "json_object"); a malformed one is a 400 naming the field,
// and so is completions' `echo: true` beside a schema (the text would start with the prompt). The
// schema is copied out of the caller's (short-lived) parse.
result<std::optional<output_schema_request>> extract_output_schema(api which, const boost::json::object& body);

// What one request's output must satisfy, and what to do when it does not.
struct output_contract {
  api which = api::chat_completions;
  schema_policy policy = schema_policy::annotate;
  std::shared_ptr<const schema::compiled_schema> schema;
  std::uint64_t retries = 0;  // extra attempts (policy retry, whole answers)
  bool stream_event = false;  // annotate on a stream: the client opted in to the sluice.schema event
  std::uint32_t choices = 1;       // the request's `n`: verdicts name the failing choice when > 1
  std::uint32_t max_choices = 16;  // schema-max-choices: choice indices a stream check tracks

  // A stream needs a stream_check unless its verdict would go nowhere (annotate, not opted in).
  bool checks_streams() const noexcept { return policy != schema_policy::annotate || stream_event; }
  // Whole answers under `retry` may be sent again: the forwarder keeps the request body.
  bool keeps_request_body() const noexcept { return policy == schema_policy::retry && retries > 0; }
};

struct contract_headers {
  std::string_view policy;  // x-sluice-schema-policy ("" = absent)
  std::string_view events;  // x-sluice-schema-events
};

// Policy from the header (else config) and the schema from the cache. A bad header value is a 400
// naming the header (even without a schema); a refused schema is a 400 whose param is the schema's
// place in the request plus the pointer of the offending keyword; `n` above schema-max-choices is a
// 400 naming `n`. nullopt: no schema asked for.
result<std::optional<output_contract>> make_output_contract(api which, std::optional<output_schema_request> wanted,
                                                            contract_headers headers, const schema_options& opts,
                                                            schema::schema_cache& cache);

// Compiles each function tool's parameter schema (validate_request's tool_schemas) through the
// cache, as schema::compile_purpose::check_only: nothing is validated against a tool schema, so
// keywords and formats sluice does not assert are annotations there, while malformed keywords,
// unresolvable or endless $refs and the cache's compile limits are refused as for response
// schemas. The first refused tool is a 400 whose param is its place in the request plus the
// compiler's pointer ("tools[0].function.parameters/properties/a/$ref"). Called right after
// make_output_contract.
result<void> check_tool_schemas(const std::vector<tool_schema_request>& tools, schema::schema_cache& cache);

// A verdict on a whole answer or a stream, and which choice it is about. `choice` is set when the
// verdict must name it: the request asked for n > 1 or the failing choice is not index 0.
struct output_verdict {
  schema::verdict error;               // empty: every checked choice conforms
  std::optional<std::uint32_t> choice;  // the failing choice's `index`
  // Every choice answered with tool calls, so nothing was judged: the response schema governs
  // text answers only (a tool call's arguments follow its tool's parameters, which sluice does not
  // assert). error is then empty.
  bool tool_calls = false;
  explicit operator bool() const noexcept { return error.has_value(); }
};

// The verdict on a whole (non-stream) 2xx answer body: every choice's output text (chat
// `choices[i].message.content`, completions `choices[i].text`; responses: the joined output_text
// parts) parsed and validated; the first failing choice decides. A choice that calls a tool (chat:
// a non-empty `message.tool_calls`; responses: any `function_call` item in `output`) is not
// judged; when no choice is left, the verdict is tool_calls. A body without output text
// otherwise (malformed, no choices, a refusal) is a malformed_json verdict.
output_verdict check_whole(const output_contract& c, std::string_view body);

// "valid", or "invalid; [choice=<i>; ]path=<instance path>; <message>" made header-safe (printable
// ASCII, bounded); an output_verdict of tool calls only is "skipped; tool_calls".
std::string verdict_header_value(const schema::verdict& v, std::optional<std::uint32_t> choice = std::nullopt);
std::string verdict_header_value(const output_verdict& v);
// {"valid":true} or {"valid":false,["choice":i,]"instance_path":..,"schema_path":..,"message":..};
// an output_verdict of tool calls only is {"valid":true,"skipped":"tool_calls"}.
std::string verdict_json(const schema::verdict& v, std::optional<std::uint32_t> choice = std::nullopt);
std::string verdict_json(const output_verdict& v);
// The error for a violation under reject/retry: upstream_protocol (502), code "schema_violation",
// param = the instance path, the message naming it (and the choice, when given).
error violation_error(const schema::validation_error& v, std::optional<std::uint32_t> choice = std::nullopt);

// What the forwarder does with a whole answer after its check (handler::check_whole_answer).
struct whole_check {
  std::optional<error> failure;  // answer with this error instead (reject, retries exhausted, a failed retry)
  bool client_gone = false;      // the client left during a retry: nothing more to send
  std::vector<std::pair<std::string, std::string>> headers;  // added to the answer (or to the error)
};

// Incremental check of one stream: the relay hands it each event's already parsed JSON object.
// One stream_validator per choice index, made when the index first shows up; indices at or past
// the contract's max_choices are refused (a limit_exceeded verdict), so memory stays bounded.
class stream_check {
 public:
  explicit stream_check(const output_contract& c);

  // One upstream event. Feeds each content delta to its choice's validator (chat:
  // choices[i].delta.content; completions: choices[i].text; responses: response.output_text.delta's
  // `delta`) and finishes that choice's document at its finish_reason (responses: its end event).
  // A choice that calls a tool (chat: a tool_calls delta or finish_reason "tool_calls"; responses:
  // a function_call output item) is not judged at its end (text judged before the call stands).
  // Under reject/retry a violation is the error to send in-band; under annotate it is only recorded.
  std::optional<error> on_event(const boost::json::object& event);
  // The upstream's end marker ([DONE] for chat): every choice seen (choice 0 if none) must hold a
  // complete document by now.
  std::optional<error> on_done();
  // annotate + opted in: the sluice.schema event (SSE wire form) to send once before the stream's
  // end; empty otherwise. Finishes the document if the end was not seen.
  std::string final_event();

  // Every choice the request asked for has finished (or the stream's end was seen).
  bool finished() const noexcept { return finished_ || expected_finished_ >= expected_; }
  bool emits_event() const noexcept { return emit_event_ && policy_ == schema_policy::annotate; }
  const schema::verdict& verdict() const noexcept { return verdict_.error; }
  const output_verdict& full_verdict() const noexcept { return verdict_; }
  std::size_t choices_tracked() const noexcept { return tracked_; }

 private:
  struct choice_state {
    std::optional<schema::stream_validator> validator;  // made on the choice's first event
    bool finished = false;
    bool tool_call = false;  // the choice calls a tool: its end is not judged
  };

  choice_state& slot(std::uint32_t index);  // index < max_choices_; makes its validator
  std::optional<error> out_of_bounds(std::int64_t index);  // a limit_exceeded verdict naming it
  std::optional<error> feed(std::uint32_t index, std::string_view delta);
  std::optional<error> finish_choice(std::uint32_t index);
  void mark_tool_call(std::uint32_t index);
  std::optional<error> finish();
  std::optional<error> judge(std::uint32_t index, const result<void>& r);
  std::optional<error> refuse(std::uint32_t index, schema::validation_error why);

  std::shared_ptr<const schema::compiled_schema> schema_;
  std::vector<choice_state> choices_;  // by index, grown to the highest index seen (< max_choices_)
  std::size_t tracked_ = 0;            // validators made
  api which_;
  schema_policy policy_;
  bool emit_event_;
  std::uint32_t expected_;     // the request's n
  std::uint32_t max_choices_;  // schema-max-choices
  std::uint32_t expected_finished_ = 0;  // choices below expected_ that reached their finish_reason
  bool finished_ = false;
  output_verdict verdict_;
};

// Exposes the cache's counters on /metrics as sluice_schema_cache_* (docs/schema.md). The cache must
// outlive the registry's scrapes.
result<void> register_schema_cache_metrics(obs::metrics_registry& registry, const schema::schema_cache& cache);

}  // namespace sluice::proxy
