#include "dialects/anthropic_upstream_response.hpp"
#include "dialects/json_fields.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

namespace sluice::dialects {

namespace json = boost::json;

namespace {

error not_a_message(std::string message) { return error::make(errc::upstream_protocol, std::move(message)); }

// The chat message's parts gathered from the content blocks, in order.
struct gathered {
  std::string text;
  std::string reasoning;
  bool has_text = false;
  json::array tool_calls;
};

result<void> add_tool_call(const json::object& block, gathered& g) {
  const auto* id = block.if_contains("id");
  const auto* name = block.if_contains("name");
  const auto* input = block.if_contains("input");
  if (!id || !id->is_string() || !name || !name->is_string() || !input || !input->is_object())
    return not_a_message("the upstream's tool_use block lacks its id, name or object input");
  json::object function{{"name", *name}, {"arguments", json::serialize(*input)}};
  g.tool_calls.push_back(json::object{{"id", *id}, {"type", "function"}, {"function", std::move(function)}});
  return ok;
}

result<gathered> gather(const json::array& content) {
  gathered g;
  for (const auto& b : content) {
    const auto* block = b.if_object();
    if (!block) return not_a_message("the upstream's message holds a content block that is not an object");
    const auto type = string_field(*block, "type");
    if (type == "text") {
      g.text += string_field(*block, "text");  // blocks joined as the stream joins their deltas
      g.has_text = true;
    } else if (type == "thinking") {
      g.reasoning += string_field(*block, "thinking");
    } else if (type == "tool_use") {
      if (auto r = add_tool_call(*block, g); !r) return std::move(r).err();
    }  // redacted_thinking, server tools' blocks, kinds added later: nothing a chat client can take
  }
  return g;
}

}  // namespace

result<json::object> chat_completion_of(const json::object& message, const chunk_start_info& info) {
  if (const auto type = string_field(message, "type"); message.contains("type") && type != "message")
    return not_a_message("the upstream's answer is not a message");
  const auto* content = message.if_contains("content");
  if (!content || !content->is_array()) return not_a_message("the upstream's message has no content array");
  auto g = gather(content->get_array());
  if (!g) return std::move(g).err();
  json::object reply{{"role", "assistant"}, {"content", g->has_text ? json::value(g->text) : json::value(nullptr)}};
  if (!g->reasoning.empty()) reply["reasoning_content"] = g->reasoning;
  if (!g->tool_calls.empty()) reply["tool_calls"] = std::move(g->tool_calls);
  json::object choice{{"index", 0},
                      {"message", std::move(reply)},
                      {"logprobs", nullptr},
                      {"finish_reason", finish_reason_of_stop_reason(string_field(message, "stop_reason"))}};
  messages_usage usage;
  usage.update(object_field(&message, "usage"));
  const auto model = string_field(message, "model");
  return json::object{{"id", info.id},
                      {"object", "chat.completion"},
                      {"created", info.created},
                      {"model", model.empty() ? std::string_view(info.model) : model},
                      {"choices", json::array{std::move(choice)}},
                      {"usage", usage.chat_usage()}};
}

std::string openai_error_body_of_messages(unsigned status, std::string_view anthropic_body) {
  boost::system::error_code ec;
  const json::value v = json::parse(anthropic_body, ec);
  const auto* outer = !ec && v.is_object() ? &v.get_object() : nullptr;
  const auto* err = outer && string_field(*outer, "type") == "error" ? object_field(outer, "error") : nullptr;
  std::string_view type, message;
  if (err) {
    type = string_field(*err, "type");
    message = string_field(*err, "message");
  }
  if (message.empty()) message = status >= 500 ? "The upstream failed to answer." : "The upstream refused the request.";
  return openai_error_json(message, openai_error_kind_of(type, status));
}

unsigned openai_status_of_messages(unsigned status) noexcept { return status == 529 ? 503 : status; }

}  // namespace sluice::dialects
