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
#include "proxy/request_validation.hpp"
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
  std::uint64_t cache_entries = 1000;
  std::uint64_t cache_bytes = 64 * 1024 * 1024;
  duration cache_ttl{0};                          // 0: entries never expire

  void register_options(config::option_table& t);
  result<void> validate() const;
  schema::cache_options cache_options() const;
};

// The json_schema format of a parsed request body: chat `response_format`, responses `text.format`.
// nullopt when none is asked for (no format, "text", "json_object"); a malformed one is a 400 naming
// the field. The schema is copied out of the caller's (short-lived) parse.
result<std::optional<output_schema_request>> extract_output_schema(api which, const boost::json::object& body);

// What one request's output must satisfy, and what to do when it does not.
struct output_contract {
  api which = api::chat_completions;
  schema_policy policy = schema_policy::annotate;
  std::shared_ptr<const schema::compiled_schema> schema;
  std::uint64_t retries = 0;  // extra attempts (policy retry, whole answers)
  bool stream_event = false;  // annotate on a stream: the client opted in to the sluice.schema event

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
// place in the request plus the pointer of the offending keyword. nullopt: no schema asked for.
result<std::optional<output_contract>> make_output_contract(api which, std::optional<output_schema_request> wanted,
                                                            contract_headers headers, const schema_options& opts,
                                                            schema::schema_cache& cache);

// The verdict on a whole (non-stream) 2xx answer body: its output text parsed and validated. A body
// without output text (malformed, a refusal, tool calls) is a malformed_json verdict.
schema::verdict check_whole(const output_contract& c, std::string_view body);

// "valid", or "invalid; path=<instance path>; <message>" made header-safe (printable ASCII, bounded).
std::string verdict_header_value(const schema::verdict& v);
// {"valid":true} or {"valid":false,"instance_path":..,"schema_path":..,"message":..}
std::string verdict_json(const schema::verdict& v);
// The error for a violation under reject/retry: upstream_protocol (502), code "schema_violation",
// param = the instance path, the message naming it.
error violation_error(const schema::validation_error& v);

// What the forwarder does with a whole answer after its check (handler::check_whole_answer).
struct whole_check {
  std::optional<error> failure;  // answer with this error instead (reject, retries exhausted, a failed retry)
  bool client_gone = false;      // the client left during a retry: nothing more to send
  std::vector<std::pair<std::string, std::string>> headers;  // added to the answer (or to the error)
};

// Incremental check of one stream: the relay hands it each event's already parsed JSON object.
class stream_check {
 public:
  explicit stream_check(const output_contract& c);

  // One upstream event. Feeds its content delta (chat: choices[0].delta.content; responses:
  // response.output_text.delta's `delta`) and finishes the document at its end event. Under
  // reject/retry a violation is the error to send in-band; under annotate it is only recorded.
  std::optional<error> on_event(const boost::json::object& event);
  // The upstream's end marker ([DONE] for chat): the document must be complete by now.
  std::optional<error> on_done();
  // annotate + opted in: the sluice.schema event (SSE wire form) to send once before the stream's
  // end; empty otherwise. Finishes the document if the end was not seen.
  std::string final_event();

  bool finished() const noexcept { return finished_; }
  bool emits_event() const noexcept { return emit_event_ && policy_ == schema_policy::annotate; }
  const schema::verdict& verdict() const noexcept { return verdict_; }

 private:
  std::optional<error> feed(std::string_view delta);
  std::optional<error> finish();
  std::optional<error> judge(const result<void>& r);

  schema::stream_validator validator_;
  api which_;
  schema_policy policy_;
  bool emit_event_;
  bool finished_ = false;
  schema::verdict verdict_;
};

// Exposes the cache's counters on /metrics as sluice_schema_cache_* (docs/schema.md). The cache must
// outlive the registry's scrapes.
result<void> register_schema_cache_metrics(obs::metrics_registry& registry, const schema::schema_cache& cache);

}  // namespace sluice::proxy
