#include "dialects/anthropic_upstream_common.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <limits>
#include <string>

namespace sluice::dialects {

namespace json = boost::json;

namespace {

// A count the upstream named: a non-negative integer (null, absent or anything else: not named).
bool named_count(const json::object& o, std::string_view key, std::uint64_t& into) noexcept {
  const auto n = non_negative_integer(o.if_contains(key));
  if (n) into = *n;
  return n.has_value();
}

// The data parsed into `resource` (a value moved keeps its storage; one assigned would be copied
// out of it), or null when it is not JSON.
json::value parsed_into(std::string_view data, json::monotonic_resource& resource) {
  boost::system::error_code ec;
  json::value v = json::parse(data, ec, json::storage_ptr(&resource));
  if (ec) return json::value(nullptr, json::storage_ptr(&resource));
  return v;
}

std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) noexcept {
  return a > std::numeric_limits<std::uint64_t>::max() - b ? std::numeric_limits<std::uint64_t>::max() : a + b;
}

}  // namespace

parsed_event::parsed_event(std::string_view sse_type, std::string_view data)
    : resource_(buffer_, sizeof buffer_), value_(parsed_into(data, resource_)), type_(sse_type) {
  if (const auto* o = value_.if_object())
    if (const auto* named = o->if_contains("type"); named && named->is_string()) type_ = named->get_string();
}

std::optional<std::uint64_t> non_negative_integer(const json::value* v) noexcept {
  if (v && v->is_uint64()) return v->get_uint64();
  if (v && v->is_int64() && v->get_int64() >= 0) return static_cast<std::uint64_t>(v->get_int64());
  return std::nullopt;
}

std::string_view finish_reason_of_stop_reason(std::string_view stop_reason) noexcept {
  if (stop_reason == "max_tokens" || stop_reason == "model_context_window_exceeded") return "length";
  if (stop_reason == "tool_use") return "tool_calls";
  if (stop_reason == "refusal") return "content_filter";
  return "stop";  // end_turn, stop_sequence, pause_turn, and a reason chat completions has no name for
}

void messages_usage::update(const json::object* usage) noexcept {
  if (!usage) return;
  named_count(*usage, "input_tokens", input_tokens);
  named_count(*usage, "cache_read_input_tokens", cache_read_input_tokens);
  named_count(*usage, "cache_creation_input_tokens", cache_creation_input_tokens);
  named_count(*usage, "output_tokens", output_tokens);
}

std::uint64_t messages_usage::prompt_tokens() const noexcept {
  return saturating_add(saturating_add(input_tokens, cache_read_input_tokens), cache_creation_input_tokens);
}

json::object messages_usage::chat_usage() const {
  return json::object{{"prompt_tokens", prompt_tokens()},
                      {"completion_tokens", completion_tokens()},
                      {"total_tokens", saturating_add(prompt_tokens(), completion_tokens())},
                      {"prompt_tokens_details", json::object{{"cached_tokens", cache_read_input_tokens}}}};
}

json::object messages_usage::responses_usage() const {
  return json::object{{"input_tokens", prompt_tokens()},
                      {"input_tokens_details", json::object{{"cached_tokens", cache_read_input_tokens},
                                                            {"cache_write_tokens", cache_creation_input_tokens}}},
                      {"output_tokens", completion_tokens()},
                      {"output_tokens_details", json::object{{"reasoning_tokens", 0}}},
                      {"total_tokens", saturating_add(prompt_tokens(), completion_tokens())}};
}

openai_error_kind openai_error_kind_of(std::string_view type, unsigned status) noexcept {
  if (type.empty()) type = status == 429 ? "rate_limit_error" : status == 529 ? "overloaded_error" : "";
  if (type == "overloaded_error") return {"upstream_error", "upstream_overloaded"};
  if (type == "rate_limit_error") return {"rate_limit_error", "rate_limit_exceeded"};
  if (status >= 400 && status < 500) return {"invalid_request_error", "upstream_error"};
  return {"upstream_error", "upstream_error"};
}

json::object openai_error_object(std::string_view message, openai_error_kind kind) {
  return json::object{{"message", message}, {"type", kind.type}, {"param", nullptr}, {"code", kind.code}};
}

std::string openai_error_json(std::string_view message, openai_error_kind kind) {
  return json::serialize(json::object{{"error", openai_error_object(message, kind)}});
}

}  // namespace sluice::dialects
