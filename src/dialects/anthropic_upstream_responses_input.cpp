#include "dialects/anthropic_upstream_responses_input.hpp"
#include "dialects/anthropic_upstream_turns.hpp"

#include <boost/json/value.hpp>
#include <string>
#include <string_view>

namespace sluice::dialects {

namespace json = boost::json;

namespace {

// The conversation being built, and the run its last turn gathers: an assistant turn takes the
// function_call items that follow it, a user turn of tool results the function_call_output items.
struct input_conversation {
  enum class run { none, assistant, tool_results };
  std::string system;
  json::array turns;
  run last = run::none;
};

std::string part_param(const std::string& param, std::size_t i) { return param + "." + std::to_string(i); }

// A part's type, or the empty string when it has none.
std::string_view part_type(const json::object* part) {
  const auto* type = part ? part->if_contains("type") : nullptr;
  return type && type->is_string() ? std::string_view(type->get_string()) : std::string_view{};
}

// A part's text member (`key`), when it is a string.
const json::value* part_text(const json::object* part, std::string_view key) {
  const auto* text = part ? part->if_contains(key) : nullptr;
  return text && text->is_string() ? text : nullptr;
}

// System and developer content: a string, or input_text parts joined by newlines.
result<std::string> instruction_text(const json::value* content, const std::string& param) {
  if (content && content->is_string()) return std::string(content->get_string());
  if (!content || !content->is_array()) return refused("content must be a string or an array of input_text parts", param);
  std::string text;
  for (std::size_t i = 0; i < content->get_array().size(); ++i) {
    const auto* part = content->get_array()[i].if_object();
    const auto* t = part_text(part, "text");
    if (part_type(part) != "input_text" || !t) return refused("only input_text parts can be carried here", part_param(param, i) + ".type");
    text += (i == 0 ? "" : "\n") + std::string(t->get_string());
  }
  return text;
}

result<json::object> input_image_block(const json::object& part, const std::string& param) {
  if (present(part, "file_id")) return refused("an image by file_id cannot be carried: the upstream cannot read OpenAI's files", param + ".file_id");
  const auto* url = present(part, "image_url");
  if (!url || !url->is_string()) return refused("an input_image part needs image_url", param + ".image_url");
  return image_block_of_url(url->get_string(), param + ".image_url");
}

// A user's parts (and a tool output's): input_text and input_image; input_file and others refused.
result<json::array> input_blocks(const json::array& parts, const std::string& param) {
  return user_content_blocks(parts, param, {"input_text", "input_image", input_image_block});
}

// An assistant's content: a string, or output_text, input_text and refusal parts, as text blocks
// (empty text skipped: the Messages API refuses an empty block).
result<json::array> assistant_output_blocks(const json::value* content, const std::string& param) {
  json::array blocks;
  auto add = [&](std::string_view text) {
    if (!text.empty()) blocks.push_back(json::object{{"type", "text"}, {"text", text}});
  };
  if (content && content->is_string()) {
    add(content->get_string());
    return blocks;
  }
  if (!content || !content->is_array()) return refused("content must be a string or an array of output_text parts", param);
  for (std::size_t i = 0; i < content->get_array().size(); ++i) {
    const auto* part = content->get_array()[i].if_object();
    const auto type = part_type(part);
    const auto* text = part_text(part, type == "refusal" ? "refusal" : "text");
    if ((type != "output_text" && type != "input_text" && type != "refusal") || !text)
      return refused("an assistant's content parts are output_text or refusal", part_param(param, i) + ".type");
    add(text->get_string());
  }
  return blocks;
}

result<void> add_message_item(const json::object& item, const std::string& param, input_conversation& c) {
  const auto* role = item.if_contains("role");
  const auto* content = present(item, "content");
  if (role && (*role == "system" || *role == "developer")) {
    auto text = instruction_text(content, param + ".content");
    if (!text) return std::move(text).err();
    if (!text->empty()) c.system += (c.system.empty() ? "" : "\n\n") + *text;
    return ok;  // wherever it stands: the Messages API has one system prompt
  }
  if (role && *role == "user") {
    c.last = input_conversation::run::none;
    return add_user_turn(content, param, input_blocks, c.turns);
  }
  if (!role || *role != "assistant") return refused("role must be user, assistant, system or developer", param + ".role");
  auto blocks = assistant_output_blocks(content, param + ".content");
  if (!blocks) return std::move(blocks).err();
  c.last = blocks->empty() ? input_conversation::run::none : input_conversation::run::assistant;
  if (!blocks->empty()) c.turns.push_back(json::object{{"role", "assistant"}, {"content", std::move(*blocks)}});
  return ok;  // an assistant message with nothing in it: no turn (the Messages API refuses an empty one)
}

// Appends a block to the last turn when it gathers `run`, else to a new turn of `role`.
void add_to_run(json::object block, input_conversation::run run, std::string_view role, input_conversation& c) {
  if (c.last != run) c.turns.push_back(json::object{{"role", role}, {"content", json::array{}}});
  c.turns.back().get_object()["content"].get_array().push_back(std::move(block));
  c.last = run;
}

const json::value* string_member(const json::object& item, std::string_view key) {
  const auto* v = item.if_contains(key);
  return v && v->is_string() ? v : nullptr;
}

result<void> add_function_call(const json::object& item, const std::string& param, input_conversation& c) {
  const auto* call_id = string_member(item, "call_id");
  if (!call_id) return refused("a function_call item needs call_id", param + ".call_id");
  const auto* name = string_member(item, "name");
  if (!name) return refused("a function_call item needs name", param + ".name");
  auto input = tool_input_of(item.if_contains("arguments"), param + ".arguments");
  if (!input) return std::move(input).err();
  add_to_run({{"type", "tool_use"}, {"id", *call_id}, {"name", *name}, {"input", std::move(*input)}}, input_conversation::run::assistant,
             "assistant", c);
  return ok;
}

result<void> add_function_call_output(const json::object& item, const std::string& param, input_conversation& c) {
  const auto* call_id = string_member(item, "call_id");
  if (!call_id) return refused("a function_call_output item needs call_id", param + ".call_id");
  const auto* output = present(item, "output");
  json::value content;
  if (output && output->is_string()) {
    content = *output;
  } else if (output && output->is_array()) {
    auto blocks = input_blocks(output->get_array(), param + ".output");
    if (!blocks) return std::move(blocks).err();
    content = std::move(*blocks);
  } else {
    return refused("output must be a string or an array of parts", param + ".output");
  }
  add_to_run({{"type", "tool_result"}, {"tool_use_id", *call_id}, {"content", std::move(content)}}, input_conversation::run::tool_results,
             "user", c);
  return ok;
}

result<void> add_item(const json::object& item, const std::string& param, input_conversation& c) {
  const auto* type = present(item, "type");
  if (type && !type->is_string()) return refused("an input item's type must be a string", param + ".type");
  if (!type || *type == "message") return add_message_item(item, param, c);
  if (*type == "function_call") return add_function_call(item, param, c);
  if (*type == "function_call_output") return add_function_call_output(item, param, c);
  if (*type == "reasoning") return ok;  // earlier reasoning: the Messages API thinks afresh (no signature to replay it)
  return refused("input item type '" + std::string(type->get_string()) + "' cannot be carried to an Anthropic upstream", param + ".type");
}

}  // namespace

result<void> translate_responses_input(const json::object& request, json::object& out) {
  input_conversation c;
  if (const auto* instructions = present(request, "instructions")) {
    if (!instructions->is_string()) return refused("instructions must be a string", "instructions");
    c.system = instructions->get_string();
  }
  const auto* input = present(request, "input");
  if (input && input->is_string()) {
    c.turns.push_back(json::object{{"role", "user"}, {"content", *input}});
  } else if (input && input->is_array() && !input->get_array().empty()) {
    for (std::size_t i = 0; i < input->get_array().size(); ++i) {
      const std::string param = "input." + std::to_string(i);
      const auto* item = input->get_array()[i].if_object();
      if (!item) return refused("an input item must be an object", param);
      if (auto r = add_item(*item, param, c); !r) return r;
    }
  } else {
    return refused("input must be a string or a non-empty array of items", "input");
  }
  if (c.turns.empty()) return refused("input needs a user or assistant item besides the system ones", "input");
  if (!c.system.empty()) out["system"] = std::move(c.system);
  out["messages"] = std::move(c.turns);
  return ok;
}

}  // namespace sluice::dialects
