#include "dialects/anthropic_upstream_turns.hpp"

#include <boost/json/parse.hpp>
#include <string>
#include <string_view>

namespace sluice::dialects {

namespace json = boost::json;

namespace {

// Content that may be text only (system, developer and tool messages): a string, or an array of
// {"type":"text","text":...} parts, as the Messages API's text blocks.
result<json::value> text_content(const json::value* content, const std::string& param) {
  if (!content) return refused("content is required", param);
  if (content->is_string()) return *content;
  if (!content->is_array()) return refused("content must be a string or an array of text parts", param);
  json::array blocks;
  for (std::size_t i = 0; i < content->get_array().size(); ++i) {
    const auto* part = content->get_array()[i].if_object();
    const auto* text = part ? part->if_contains("text") : nullptr;
    if (!part || !part->contains("type") || part->at("type") != "text" || !text || !text->is_string())
      return refused("only text parts can be carried here", param + "." + std::to_string(i) + ".type");
    blocks.push_back(json::object{{"type", "text"}, {"text", *text}});
  }
  return json::value(std::move(blocks));
}

// The text of a system or developer message: its string, or its parts joined by newlines.
std::string joined(const json::value& content) {
  if (content.is_string()) return std::string(content.get_string());
  std::string out;
  for (const auto& block : content.get_array()) {
    if (!out.empty()) out += "\n";
    out += block.at("text").get_string();
  }
  return out;
}

// An image_url part: its image_url.url as image_block_of_url reads it.
result<json::object> image_block_of(const json::object& part, const std::string& param) {
  const auto* image = part.if_contains("image_url");
  const auto* url = image && image->is_object() ? image->get_object().if_contains("url") : nullptr;
  if (!url || !url->is_string()) return refused("an image_url part needs image_url.url", param + ".image_url.url");
  return image_block_of_url(url->get_string(), param + ".image_url.url");
}

// A user message's parts: text and images; audio, files and kinds added later are refused.
result<json::array> user_blocks(const json::array& parts, const std::string& param) {
  return user_content_blocks(parts, param, {"text", "image_url", image_block_of});
}

// An assistant's tool call as a tool_use block; its arguments must be a JSON object.
result<json::object> tool_use_block_of(const json::value& c, const std::string& param) {
  const auto* call = c.if_object();
  if (!call) return refused("a tool call must be an object", param);
  if (const auto* type = present(*call, "type"); type && *type != "function") return refused("a tool call's type must be function", param + ".type");
  const auto* id = call->if_contains("id");
  if (!id || !id->is_string()) return refused("a tool call needs an id", param + ".id");
  const auto* fn = call->if_contains("function");
  const auto* name = fn && fn->is_object() ? fn->get_object().if_contains("name") : nullptr;
  if (!name || !name->is_string()) return refused("a tool call needs function.name", param + ".function.name");
  auto input = tool_input_of(fn->get_object().if_contains("arguments"), param + ".function.arguments");
  if (!input) return std::move(input).err();
  return json::object{{"type", "tool_use"}, {"id", *id}, {"name", *name}, {"input", std::move(*input)}};
}

void add_text_block(std::string_view text, json::array& blocks) {
  if (!text.empty()) blocks.push_back(json::object{{"type", "text"}, {"text", text}});  // the Messages API refuses empty text blocks
}

// An assistant message's content (a string, text or refusal parts, or null) and tool calls.
result<json::array> assistant_blocks(const json::object& msg, const std::string& param) {
  json::array blocks;
  const auto* content = present(msg, "content");
  if (content && content->is_string()) {
    add_text_block(content->get_string(), blocks);
  } else if (content && content->is_array()) {
    for (std::size_t i = 0; i < content->get_array().size(); ++i) {
      const auto* part = content->get_array()[i].if_object();
      const auto* type = part ? part->if_contains("type") : nullptr;
      const auto* text = !type ? nullptr : *type == "text" ? part->if_contains("text") : *type == "refusal" ? part->if_contains("refusal") : nullptr;
      if (!text || !text->is_string())
        return refused("an assistant's content parts are text or refusal", param + ".content." + std::to_string(i) + ".type");
      add_text_block(text->get_string(), blocks);
    }
  } else if (content) {
    return refused("content must be a string, an array of parts or null", param + ".content");
  }
  if (present(msg, "function_call")) return refused("function_call (deprecated) is not carried; use tool_calls", param + ".function_call");
  const auto* calls = present(msg, "tool_calls");
  if (calls && !calls->is_array()) return refused("tool_calls must be an array", param + ".tool_calls");
  for (std::size_t k = 0; calls && k < calls->get_array().size(); ++k) {
    auto block = tool_use_block_of(calls->get_array()[k], param + ".tool_calls." + std::to_string(k));
    if (!block) return std::move(block).err();
    blocks.push_back(std::move(*block));
  }
  return blocks;
}

result<json::object> tool_result_of(const json::object& msg, const std::string& param) {
  const auto* id = msg.if_contains("tool_call_id");
  if (!id || !id->is_string()) return refused("a tool message needs tool_call_id", param + ".tool_call_id");
  auto content = text_content(present(msg, "content"), param + ".content");
  if (!content) return std::move(content).err();
  return json::object{{"type", "tool_result"}, {"tool_use_id", *id}, {"content", std::move(*content)}};
}

// The conversation being built: the system text, the turns, and whether the last turn is the user
// turn that gathers a run of tool results.
struct conversation {
  std::string system;
  json::array turns;
  bool in_tool_run = false;
};

result<void> add_message(const json::object& msg, const std::string& param, conversation& c) {
  const auto* role = msg.if_contains("role");
  if (role && (*role == "system" || *role == "developer")) {
    auto content = text_content(present(msg, "content"), param + ".content");
    if (!content) return std::move(content).err();
    if (auto text = joined(*content); !text.empty()) c.system += (c.system.empty() ? "" : "\n\n") + text;
    return ok;  // wherever it stands: the Messages API has one system prompt
  }
  if (role && *role == "tool") {
    auto block = tool_result_of(msg, param);
    if (!block) return std::move(block).err();
    if (!c.in_tool_run) c.turns.push_back(json::object{{"role", "user"}, {"content", json::array{}}});
    c.turns.back().get_object()["content"].get_array().push_back(std::move(*block));
    c.in_tool_run = true;
    return ok;
  }
  c.in_tool_run = false;
  if (role && *role == "user") return add_user_turn(present(msg, "content"), param, user_blocks, c.turns);
  if (!role || *role != "assistant") return refused("role must be system, developer, user, assistant or tool", param + ".role");
  auto blocks = assistant_blocks(msg, param);
  if (!blocks) return std::move(blocks).err();
  if (!blocks->empty()) c.turns.push_back(json::object{{"role", "assistant"}, {"content", std::move(*blocks)}});
  return ok;  // an assistant message with nothing in it: no turn (the Messages API refuses an empty one)
}

}  // namespace

result<json::object> image_block_of_url(std::string_view u, const std::string& param) {
  json::object source;
  if (u.starts_with("data:")) {
    const auto marker = u.find(";base64,");
    if (marker == std::string_view::npos || marker == 5) return refused("a data: URL must be data:<media type>;base64,<data>", param);
    source = {{"type", "base64"}, {"media_type", u.substr(5, marker - 5)}, {"data", u.substr(marker + 8)}};
  } else if (u.starts_with("https://") || u.starts_with("http://")) {
    source = {{"type", "url"}, {"url", u}};
  } else {
    return refused("an image URL must be a data: URL or an http(s) URL", param);
  }
  return json::object{{"type", "image"}, {"source", std::move(source)}};
}

result<json::array> user_content_blocks(const json::array& parts, const std::string& param, const user_part_kinds& kinds) {
  if (parts.empty()) return refused("content must not be empty", param);
  json::array blocks;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string pparam = param + "." + std::to_string(i);
    const auto* part = parts[i].if_object();
    const auto* type = part ? part->if_contains("type") : nullptr;
    if (!type || !type->is_string()) return refused("a content part needs a type", pparam + ".type");
    const std::string_view t = type->get_string();
    if (t == kinds.text) {
      const auto* text = part->if_contains("text");
      if (!text || !text->is_string()) return refused("a " + std::string(kinds.text) + " part needs text", pparam + ".text");
      blocks.push_back(json::object{{"type", "text"}, {"text", *text}});
    } else if (t == kinds.image) {
      auto block = kinds.image_block(*part, pparam);
      if (!block) return std::move(block).err();
      blocks.push_back(std::move(*block));
    } else {
      return refused("content part type '" + std::string(t) + "' has no Messages equivalent", pparam + ".type");
    }
  }
  return blocks;
}

result<void> add_user_turn(const json::value* content, const std::string& param, user_parts_reader parts, json::array& turns) {
  if (content && content->is_string()) {
    turns.push_back(json::object{{"role", "user"}, {"content", *content}});
    return ok;
  }
  if (!content || !content->is_array()) return refused("content must be a string or an array of parts", param + ".content");
  auto blocks = parts(content->get_array(), param + ".content");
  if (!blocks) return std::move(blocks).err();
  turns.push_back(json::object{{"role", "user"}, {"content", std::move(*blocks)}});
  return ok;
}

result<json::value> tool_input_of(const json::value* arguments, const std::string& param) {
  if (arguments && !arguments->is_null() && !arguments->is_string()) return refused("arguments must be a string", param);
  const std::string_view text = arguments && arguments->is_string() ? std::string_view(arguments->get_string()) : std::string_view{};
  boost::system::error_code ec;
  json::value input = text.empty() ? json::value(json::object{}) : json::parse(text, ec);
  if (ec || !input.is_object()) return refused("a tool call's arguments must be a JSON object", param);
  return input;
}

result<void> translate_chat_messages(const json::value* messages, json::object& out) {
  if (!messages || !messages->is_array() || messages->get_array().empty()) return refused("messages must be a non-empty array", "messages");
  conversation c;
  for (std::size_t i = 0; i < messages->get_array().size(); ++i) {
    const std::string param = "messages." + std::to_string(i);
    const auto* msg = messages->get_array()[i].if_object();
    if (!msg) return refused("a message must be an object", param);
    if (auto r = add_message(*msg, param, c); !r) return r;
  }
  if (c.turns.empty()) return refused("messages needs a user or assistant message besides the system ones", "messages");
  if (!c.system.empty()) out["system"] = c.system;
  out["messages"] = std::move(c.turns);
  return ok;
}

}  // namespace sluice::dialects
