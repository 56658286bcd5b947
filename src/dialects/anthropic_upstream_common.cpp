#include "dialects/anthropic_upstream_common.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <limits>
#include <string>

namespace sluice::dialects {

namespace json = boost::json;

namespace {

// A count the upstream named: a non-negative integer (null, absent or anything else: not named).
bool named_count(const json::object& o, std::string_view key, std::uint64_t& into) noexcept {
  const auto* v = o.if_contains(key);
  if (!v) return false;
  if (v->is_uint64()) into = v->get_uint64();
  else if (v->is_int64() && v->get_int64() >= 0) into = static_cast<std::uint64_t>(v->get_int64());
  else return false;
  return true;
}

std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) noexcept {
  return a > std::numeric_limits<std::uint64_t>::max() - b ? std::numeric_limits<std::uint64_t>::max() : a + b;
}

}  // namespace

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

openai_error_kind openai_error_kind_of(std::string_view type, unsigned status) noexcept {
  if (type.empty()) type = status == 429 ? "rate_limit_error" : status == 529 ? "overloaded_error" : "";
  if (type == "overloaded_error") return {"upstream_error", "upstream_overloaded"};
  if (type == "rate_limit_error") return {"rate_limit_error", "rate_limit_exceeded"};
  if (status >= 400 && status < 500) return {"invalid_request_error", "upstream_error"};
  return {"upstream_error", "upstream_error"};
}

std::string openai_error_json(std::string_view message, openai_error_kind kind) {
  json::object inner{{"message", message}, {"type", kind.type}, {"param", nullptr}, {"code", kind.code}};
  return json::serialize(json::object{{"error", std::move(inner)}});
}

}  // namespace sluice::dialects
