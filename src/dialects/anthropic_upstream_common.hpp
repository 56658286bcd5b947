// What the streams (anthropic_upstream_stream, anthropic_upstream_responses_stream) and the whole
// answers (anthropic_upstream_response, anthropic_upstream_responses_response) of an Anthropic
// upstream translate alike: the stop reason as a finish_reason, the usage counts,
// and an error's OpenAI type and code. One function each, so the two paths cannot drift apart
// (docs/dialects.md, "An Anthropic upstream behind /v1/chat/completions"). Pure value code.
#pragma once

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::dialects {

// The chat-completions finish_reason for a Messages stop_reason: end_turn, stop_sequence and
// pause_turn → stop; max_tokens and model_context_window_exceeded → length; tool_use → tool_calls;
// refusal → content_filter; anything else (a reason added later, none at all) → stop.
std::string_view finish_reason_of_stop_reason(std::string_view stop_reason) noexcept;

// A Messages answer's usage, kept as the upstream reports it: message_start carries the input
// counts, message_delta the cumulative output count (and, from newer upstreams, the input counts
// again). Each report replaces the fields it names; a field absent, null or not a non-negative
// integer leaves the count as it was.
struct messages_usage {
  std::uint64_t input_tokens = 0;
  std::uint64_t cache_read_input_tokens = 0;
  std::uint64_t cache_creation_input_tokens = 0;
  std::uint64_t output_tokens = 0;

  void update(const boost::json::object* usage) noexcept;
  // OpenAI counts cached prompt tokens inside prompt_tokens; the Messages API apart (saturating).
  std::uint64_t prompt_tokens() const noexcept;
  std::uint64_t completion_tokens() const noexcept { return output_tokens; }
  // {"prompt_tokens","completion_tokens","total_tokens","prompt_tokens_details":{"cached_tokens"}}
  boost::json::object chat_usage() const;
  // The Responses API's usage: {"input_tokens" (prompt_tokens()), "input_tokens_details":
  // {"cached_tokens","cache_write_tokens"}, "output_tokens", "output_tokens_details":
  // {"reasoning_tokens":0} (the Messages API does not count thinking apart), "total_tokens"}.
  boost::json::object responses_usage() const;
};

// One upstream event's data parsed as JSON (Boost.JSON) into a buffer of its own, the heap only
// past it (most events are small), and the event's type: the data's own "type" when it names one,
// else the SSE `event:` name. Nothing parsed outlives it; what a translator keeps it copies.
class parsed_event {
 public:
  parsed_event(std::string_view sse_type, std::string_view data);
  parsed_event(const parsed_event&) = delete;
  parsed_event& operator=(const parsed_event&) = delete;
  const boost::json::object* object() const noexcept { return value_.if_object(); }  // null: not a JSON object
  std::string_view type() const noexcept { return type_; }

 private:
  alignas(16) unsigned char buffer_[4096];
  boost::json::monotonic_resource resource_;
  boost::json::value value_;
  std::string_view type_;
};

// A non-negative integer (an unsigned or a non-negative signed JSON integer), or nothing.
std::optional<std::uint64_t> non_negative_integer(const boost::json::value* v) noexcept;

// The OpenAI error `type` and `code` for a Messages error type (the error body's or an `error`
// event's `error.type`), given the HTTP status it came with (0 inside a stream):
// overloaded_error → upstream_error / upstream_overloaded; rate_limit_error → rate_limit_error /
// rate_limit_exceeded; any other → upstream_error / upstream_error at 5xx or in a stream,
// invalid_request_error / upstream_error at 4xx. An empty type is read from the status (429, 529).
struct openai_error_kind {
  std::string_view type;
  std::string_view code;
};
openai_error_kind openai_error_kind_of(std::string_view messages_error_type, unsigned status) noexcept;

// {"message":M,"type":T,"param":null,"code":C}: the inside of the gateway's own error shape
// (http::error_body; a Responses stream's error event, http::responses_error_event, carries it too).
boost::json::object openai_error_object(std::string_view message, openai_error_kind kind);

// {"error":{"message":M,"type":T,"param":null,"code":C}}, the gateway's own error shape
// (http::error_body), serialised.
std::string openai_error_json(std::string_view message, openai_error_kind kind);

}  // namespace sluice::dialects
