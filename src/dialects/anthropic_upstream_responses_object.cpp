#include "dialects/anthropic_upstream_responses_object.hpp"

#include <boost/json/value.hpp>

namespace sluice::dialects {

namespace json = boost::json;

std::string responses_item_id(std::string_view prefix, const response_start_info& info, std::size_t output_index) {
  std::string_view hex = info.id;
  if (hex.starts_with("resp_")) hex.remove_prefix(5);
  std::string id(prefix);
  id += hex;
  id += '_';
  id += std::to_string(output_index);
  return id;
}

std::string_view incomplete_reason_of_stop_reason(std::string_view stop_reason) noexcept {
  const auto finish = finish_reason_of_stop_reason(stop_reason);
  if (finish == "length") return "max_output_tokens";
  if (finish == "content_filter") return "content_filter";
  return {};
}

json::object message_item(std::string_view id, std::string_view status, const std::string_view* text) {
  json::array content;
  if (text) content.push_back(json::object{{"type", "output_text"}, {"annotations", json::array{}}, {"text", *text}});
  return json::object{{"id", id}, {"type", "message"}, {"status", status}, {"role", "assistant"}, {"content", std::move(content)}};
}

json::object reasoning_item(std::string_view id, std::string_view status, const std::string_view* text) {
  json::array content;
  if (text) content.push_back(json::object{{"type", "reasoning_text"}, {"text", *text}});
  return json::object{{"id", id}, {"type", "reasoning"}, {"status", status}, {"summary", json::array{}}, {"content", std::move(content)}};
}

json::object function_call_item(std::string_view id, std::string_view status, std::string_view arguments, std::string_view call_id,
                                std::string_view name) {
  return json::object{{"id", id}, {"type", "function_call"}, {"status", status}, {"arguments", arguments}, {"call_id", call_id}, {"name", name}};
}

json::object response_object(const response_start_info& info, std::string_view model, std::string_view status,
                             std::string_view incomplete_reason, json::array output, const messages_usage* usage) {
  json::value incomplete = nullptr;
  if (!incomplete_reason.empty()) incomplete = json::object{{"reason", incomplete_reason}};
  return json::object{{"id", info.id},
                      {"object", "response"},
                      {"created_at", info.created_at},
                      {"status", status},
                      {"error", nullptr},
                      {"incomplete_details", std::move(incomplete)},
                      {"instructions", nullptr},
                      {"max_output_tokens", nullptr},
                      {"model", model},
                      {"output", std::move(output)},
                      {"parallel_tool_calls", true},
                      {"previous_response_id", nullptr},
                      {"store", false},
                      {"temperature", nullptr},
                      {"text", json::object{{"format", json::object{{"type", "text"}}}}},
                      {"tool_choice", "auto"},
                      {"tools", json::array{}},
                      {"top_p", nullptr},
                      {"truncation", "disabled"},
                      {"usage", usage ? json::value(usage->responses_usage()) : json::value(nullptr)},
                      {"user", nullptr},
                      {"metadata", json::object{}}};
}

}  // namespace sluice::dialects
