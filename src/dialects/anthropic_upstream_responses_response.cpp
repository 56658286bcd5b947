#include "dialects/anthropic_upstream_responses_response.hpp"
#include "dialects/json_fields.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

namespace sluice::dialects {

namespace json = boost::json;

namespace {

error not_a_responses_message(std::string message) { return error::make(errc::upstream_protocol, std::move(message)); }

// One content block as the output item at `output_index`, or nothing for a block the client
// cannot take.
result<std::optional<json::object>> output_item_of(const json::object& block, const response_start_info& info, std::size_t output_index) {
  const auto type = string_field(block, "type");
  if (type == "text") {
    const auto text = string_field(block, "text");
    return std::optional(message_item(responses_item_id("msg_", info, output_index), "completed", &text));
  }
  if (type == "thinking") {
    const auto text = string_field(block, "thinking");
    return std::optional(reasoning_item(responses_item_id("rs_", info, output_index), "completed", &text));
  }
  if (type != "tool_use") return std::optional<json::object>();  // redacted_thinking, server tools' blocks, kinds added later
  const auto* id = block.if_contains("id");
  const auto* name = block.if_contains("name");
  const auto* input = block.if_contains("input");
  if (!id || !id->is_string() || !name || !name->is_string() || !input || !input->is_object())
    return not_a_responses_message("the upstream's tool_use block lacks its id, name or object input");
  return std::optional(function_call_item(responses_item_id("fc_", info, output_index), "completed", json::serialize(*input),
                                          id->get_string(), name->get_string()));
}

}  // namespace

result<json::object> response_of_message(const json::object& message, const response_start_info& info) {
  if (message.contains("type") && string_field(message, "type") != "message")
    return not_a_responses_message("the upstream's answer is not a message");
  const auto* content = message.if_contains("content");
  if (!content || !content->is_array()) return not_a_responses_message("the upstream's message has no content array");
  json::array output;
  for (const auto& b : content->get_array()) {
    const auto* block = b.if_object();
    if (!block) return not_a_responses_message("the upstream's message holds a content block that is not an object");
    auto item = output_item_of(*block, info, output.size());
    if (!item) return std::move(item).err();
    if (*item) output.push_back(std::move(**item));
  }
  messages_usage usage;
  usage.update(object_field(&message, "usage"));
  const auto reason = incomplete_reason_of_stop_reason(string_field(message, "stop_reason"));
  const auto model = string_field(message, "model");
  return response_object(info, model.empty() ? std::string_view(info.model) : model, reason.empty() ? "completed" : "incomplete", reason,
                         std::move(output), &usage);
}

}  // namespace sluice::dialects
