#include "dialects/anthropic_response.hpp"
#include "dialects/json_fields.hpp"

#include <algorithm>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

namespace sluice::dialects {

namespace json = boost::json;

namespace {

error malformed(std::string message) { return error::make(errc::upstream_protocol, std::move(message)); }

result<void> append_tool_calls(const json::object& message, json::array& content) {
  const auto* calls = message.if_contains("tool_calls");
  if (!calls || !calls->is_array()) return ok;
  for (const auto& c : calls->get_array()) {
    const auto* call = c.if_object();
    const auto* fn = call ? call->if_contains("function") : nullptr;
    if (!fn || !fn->is_object()) return malformed("a tool call without a function");
    const auto args = string_field(fn->get_object(), "arguments");
    boost::system::error_code ec;
    json::value input = args.empty() ? json::value(json::object{}) : json::parse(args, ec);
    if (ec || !input.is_object()) return malformed("a tool call's arguments are not a JSON object");
    content.push_back(json::object{{"type", "tool_use"},
                                   {"id", string_field(*call, "id")},
                                   {"name", string_field(fn->get_object(), "name")},
                                   {"input", std::move(input)}});
  }
  return ok;
}

json::object usage_of(const json::object* usage) {
  const auto prompt = count_field(usage, "prompt_tokens");
  const auto cached = std::min(prompt, count_field(object_field(usage, "prompt_tokens_details"), "cached_tokens"));
  json::object out{{"input_tokens", prompt - cached}, {"output_tokens", count_field(usage, "completion_tokens")}};
  if (cached > 0) out["cache_read_input_tokens"] = cached;
  return out;
}

}  // namespace

result<json::object> message_of(const json::object& completion, const message_start_info& info) {
  const auto* choices = completion.if_contains("choices");
  if (!choices || !choices->is_array() || choices->get_array().empty() || !choices->get_array()[0].is_object())
    return malformed("the upstream's completion has no choice");
  const auto& choice = choices->get_array()[0].get_object();
  const auto* m = choice.if_contains("message");
  if (!m || !m->is_object()) return malformed("the upstream's choice has no message");
  const auto& message = m->get_object();
  json::array content;
  auto reasoning = string_field(message, "reasoning_content");
  if (reasoning.empty()) reasoning = string_field(message, "reasoning");
  if (!reasoning.empty()) content.push_back(json::object{{"type", "thinking"}, {"thinking", reasoning}, {"signature", ""}});
  if (const auto text = string_field(message, "content"); !text.empty()) content.push_back(json::object{{"type", "text"}, {"text", text}});
  if (auto r = append_tool_calls(message, content); !r) return std::move(r).err();
  const auto finish = string_field(choice, "finish_reason");
  const auto matched = string_field(choice, "stop_reason");
  const bool by_sequence = finish == "stop" && !matched.empty();
  const auto model = string_field(completion, "model");
  const auto* usage = completion.if_contains("usage");
  return json::object{{"id", info.id},
                      {"type", "message"},
                      {"role", "assistant"},
                      {"model", model.empty() ? std::string_view(info.model) : model},
                      {"content", std::move(content)},
                      {"stop_reason", by_sequence ? std::string_view("stop_sequence") : chat_to_messages_stream::stop_reason_of(finish)},
                      {"stop_sequence", by_sequence ? json::value(matched) : json::value(nullptr)},
                      {"usage", usage_of(usage ? usage->if_object() : nullptr)}};
}

}  // namespace sluice::dialects
