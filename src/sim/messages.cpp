#include "sim/messages.hpp"

#include <boost/json.hpp>

namespace sluice::sim {
namespace {

namespace json = boost::json;

error refused(std::string msg, std::string param) { return error::make(errc::bad_request, std::move(msg), std::move(param)); }

// Text bytes of a message's content: a string, or blocks (text, a tool_result's own content, a
// tool_use's input as JSON text; images and the rest count nothing).
std::uint64_t block_bytes(const json::value& content) {
  if (content.is_string()) return content.get_string().size();
  if (!content.is_array()) return 0;
  std::uint64_t n = 0;
  for (const auto& block : content.get_array()) {
    if (!block.is_object()) continue;
    const auto& b = block.get_object();
    if (auto* t = b.if_contains("text"); t && t->is_string()) n += t->get_string().size();
    else if (auto* c = b.if_contains("content")) n += block_bytes(*c);
    else if (auto* in = b.if_contains("input")) n += json::serialize(*in).size();
  }
  return n;
}

// max_tokens: required, an integer 1..max_messages_tokens.
result<std::uint64_t> read_max_tokens(const json::object& o) {
  const json::value* v = o.if_contains("max_tokens");
  if (!v) return refused("max_tokens: Field required", "max_tokens");
  std::uint64_t n = 0;
  if (v->is_uint64()) n = v->get_uint64();
  else if (v->is_int64() && v->get_int64() > 0) n = static_cast<std::uint64_t>(v->get_int64());
  if (n < 1 || n > max_messages_tokens)
    return refused("max_tokens: Input should be an integer from 1 to " + std::to_string(max_messages_tokens), "max_tokens");
  return n;
}

// The prompt's bytes and per-message overhead: `system` and every message's content. Roles are
// checked (the Messages API has no "system" or "tool" message), as are the content's types.
struct messages_prompt {
  std::uint64_t bytes = 0, overhead = 0;
};

result<messages_prompt> read_messages_prompt(const json::object& o) {
  messages_prompt size;
  if (const json::value* sys = o.if_contains("system"); sys && !sys->is_null()) {
    if (!sys->is_string() && !sys->is_array()) return refused("system: Input should be a string or a list of text blocks", "system");
    size.bytes += block_bytes(*sys);
  }
  const json::value* msgs = o.if_contains("messages");
  if (!msgs || !msgs->is_array() || msgs->get_array().empty())
    return refused("messages: Input should be a non-empty list", "messages");
  std::size_t i = 0;
  for (const auto& m : msgs->get_array()) {
    const std::string at = "messages." + std::to_string(i++);
    if (!m.is_object()) return refused(at + ": Input should be an object", "messages");
    const json::value* role = m.get_object().if_contains("role");
    if (!role || !(*role == "user" || *role == "assistant"))
      return refused(at + ".role: Input should be 'user' or 'assistant'", "messages");
    const json::value* content = m.get_object().if_contains("content");
    if (!content || !(content->is_string() || content->is_array()))
      return refused(at + ".content: Input should be a string or a list of content blocks", "messages");
    size.bytes += block_bytes(*content);
    size.overhead += 4;  // role and framing, as the chat path counts them
  }
  return size;
}

// The tool the answer calls: {"type":"any"} the first tool, {"type":"tool","name":N} N; "auto",
// "none", no tool_choice or no tools a text answer.
result<std::string> pick_messages_tool(const json::object& o) {
  const json::value* tools = o.if_contains("tools");
  if (!tools || tools->is_null()) return std::string();
  if (!tools->is_array()) return refused("tools: Input should be a list", "tools");
  std::string first;
  for (const auto& t : tools->get_array()) {
    const json::value* name = t.is_object() ? t.get_object().if_contains("name") : nullptr;
    if (!name || !name->is_string() || !valid_function_name(name->get_string()))
      return refused("tools: each tool needs a name (1..64 of a-z, A-Z, 0-9, _ and -)", "tools");
    if (first.empty()) first = name->get_string();
  }
  const json::value* choice = o.if_contains("tool_choice");
  if (!choice || choice->is_null() || first.empty()) return std::string();
  const json::value* type = choice->is_object() ? choice->get_object().if_contains("type") : nullptr;
  if (!type || !type->is_string()) return refused("tool_choice: Input should be an object with a type", "tool_choice");
  if (*type == "any") return first;
  if (*type == "tool") {
    const json::value* name = choice->get_object().if_contains("name");
    if (!name || !name->is_string() || !valid_function_name(name->get_string()))
      return refused("tool_choice.name: a tool choice of type 'tool' must name a tool", "tool_choice");
    return std::string(name->get_string());
  }
  if (*type == "auto" || *type == "none") return std::string();
  return refused("tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'", "tool_choice");
}

}  // namespace

result<completion_request> parse_messages(std::string_view body, std::uint64_t seed) {
  boost::system::error_code ec;
  json::value doc = json::parse(body, ec);
  if (ec) return refused("The request body is not valid JSON: " + ec.message(), {});
  if (!doc.is_object()) return refused("The request body must be a JSON object", {});
  const auto& o = doc.get_object();

  completion_request r;
  r.kind = api::messages;
  const json::value* model = o.if_contains("model");
  if (!model || !model->is_string()) return refused("model: Field required", "model");
  r.model = model->get_string();
  auto max = read_max_tokens(o);
  if (!max) return std::move(max).err();
  r.max_tokens = *max;
  if (const json::value* s = o.if_contains("stream"); s && !s->is_null()) {
    if (!s->is_bool()) return refused("stream: Input should be a valid boolean", "stream");
    r.stream = s->get_bool();
  }
  auto size = read_messages_prompt(o);
  if (!size) return std::move(size).err();
  auto tool = pick_messages_tool(o);
  if (!tool) return std::move(tool).err();
  r.tool_call = std::move(*tool);
  r.prompt_tokens = std::max<std::uint64_t>(1, (size->bytes + 3) / 4 + size->overhead);
  r.hash = request_hash(api::messages, body, seed);
  return r;
}

result<std::string> count_tokens_body(std::string_view body) {
  boost::system::error_code ec;
  json::value doc = json::parse(body, ec);
  if (ec) return refused("The request body is not valid JSON: " + ec.message(), {});
  if (!doc.is_object()) return refused("The request body must be a JSON object", {});
  const auto& o = doc.get_object();
  const json::value* model = o.if_contains("model");
  if (!model || !model->is_string()) return refused("model: Field required", "model");
  auto size = read_messages_prompt(o);
  if (!size) return std::move(size).err();
  const std::uint64_t tokens = std::max<std::uint64_t>(1, (size->bytes + 3) / 4 + size->overhead);
  return json::serialize(json::object{{"input_tokens", tokens}});
}

std::string anthropic_error_body(std::string_view type, std::string_view message) {
  return json::serialize(json::object{{"type", "error"}, {"error", json::object{{"type", type}, {"message", message}}}});
}

std::string_view anthropic_error_type(int status) noexcept {
  switch (status) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 529: return "overloaded_error";
    default: return status >= 500 ? "api_error" : "invalid_request_error";
  }
}

}  // namespace sluice::sim
