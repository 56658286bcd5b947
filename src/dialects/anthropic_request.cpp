#include "dialects/anthropic_request.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <optional>
#include <string>

namespace sluice::dialects {

namespace json = boost::json;

namespace {

error bad(std::string message, std::string param) {
  return error::make(errc::bad_request, std::move(message), std::move(param));
}

// A number the client sent, as a double, when it is one and lies in [lo, hi].
std::optional<double> number_in(const json::value& v, double lo, double hi) {
  if (!v.is_number()) return std::nullopt;
  const double d = v.to_number<double>();
  if (!(d >= lo && d <= hi)) return std::nullopt;
  return d;
}

// "text" blocks joined, for the places chat completions takes a string (system, tool results).
result<std::string> text_of(const json::value& content, const std::string& param) {
  if (content.is_string()) return std::string(content.get_string());
  if (!content.is_array()) return bad("must be a string or an array of text blocks", param);
  std::string out;
  for (const auto& b : content.get_array()) {
    const auto* o = b.if_object();
    const auto* text = o ? o->if_contains("text") : nullptr;
    if (!o || !o->contains("type") || o->at("type") != "text" || !text || !text->is_string())
      return bad("must hold text blocks only", param);
    if (!out.empty()) out += "\n";
    out += text->get_string();
  }
  return out;
}

result<json::object> image_part_of(const json::object& block, const std::string& param) {
  const auto* source = block.if_contains("source");
  const auto* s = source ? source->if_object() : nullptr;
  if (!s || !s->contains("type")) return bad("an image block needs a source", param + ".source");
  std::string url;
  if (s->at("type") == "base64" && s->contains("media_type") && s->contains("data") && s->at("media_type").is_string() &&
      s->at("data").is_string())
    url = "data:" + std::string(s->at("media_type").get_string()) + ";base64," + std::string(s->at("data").get_string());
  else if (s->at("type") == "url" && s->contains("url") && s->at("url").is_string())
    url = std::string(s->at("url").get_string());
  else
    return bad("an image source is base64 (media_type, data) or url", param + ".source");
  return json::object{{"type", "image_url"}, {"image_url", json::object{{"url", url}}}};
}

json::object tool_call_of(const json::object& block) {
  const auto* input = block.if_contains("input");
  return json::object{{"id", block.contains("id") ? block.at("id") : json::value("")},
                      {"type", "function"},
                      {"function", json::object{{"name", block.contains("name") ? block.at("name") : json::value("")},
                                                {"arguments", input ? json::serialize(*input) : std::string("{}")}}}};
}

// One Messages turn becomes one or more chat messages: tool results are messages of their own
// (role "tool"), placed before the user's other content as chat completions requires.
result<void> append_turn(const json::object& turn, const std::string& param, json::array& out) {
  const auto* role = turn.if_contains("role");
  if (!role || (*role != "user" && *role != "assistant")) return bad("role must be user or assistant", param + ".role");
  const auto* content = turn.if_contains("content");
  if (!content) return bad("a message needs content", param + ".content");
  if (content->is_string()) {
    out.push_back(json::object{{"role", *role}, {"content", *content}});
    return ok;
  }
  if (!content->is_array()) return bad("content must be a string or an array of blocks", param + ".content");
  json::array parts, calls;
  for (std::size_t i = 0; i < content->get_array().size(); ++i) {
    const std::string bparam = param + ".content." + std::to_string(i);
    const auto* block = content->get_array()[i].if_object();
    const auto* type = block ? block->if_contains("type") : nullptr;
    if (!type || !type->is_string()) return bad("a content block needs a type", bparam + ".type");
    const std::string_view t = type->get_string();
    if (t == "text") {
      if (!block->contains("text") || !block->at("text").is_string()) return bad("a text block needs text", bparam + ".text");
      parts.push_back(json::object{{"type", "text"}, {"text", block->at("text")}});
    } else if (t == "image") {
      auto part = image_part_of(*block, bparam);
      if (!part) return std::move(part).err();
      parts.push_back(std::move(*part));
    } else if (t == "tool_use" && *role == "assistant") {
      calls.push_back(tool_call_of(*block));
    } else if (t == "tool_result" && *role == "user") {
      auto text = block->contains("content") ? text_of(block->at("content"), bparam + ".content") : result<std::string>(std::string());
      if (!text) return std::move(text).err();
      const auto* id = block->if_contains("tool_use_id");
      if (!id || !id->is_string()) return bad("a tool_result needs tool_use_id", bparam + ".tool_use_id");
      out.push_back(json::object{{"role", "tool"}, {"tool_call_id", *id}, {"content", *text}});
    } else if (t != "thinking" && t != "redacted_thinking") {  // earlier turns' thinking: not replayed
      return bad("content block type '" + std::string(t) + "' is not supported here", bparam + ".type");
    }
  }
  if (parts.empty() && calls.empty()) return ok;
  json::object msg{{"role", *role}};
  msg["content"] = parts.empty() ? json::value(nullptr) : json::value(std::move(parts));
  if (!calls.empty()) msg["tool_calls"] = std::move(calls);
  out.push_back(std::move(msg));
  return ok;
}

result<void> translate_tools(const json::object& in, json::object& out) {
  if (const auto* tools = in.if_contains("tools")) {
    if (!tools->is_array()) return bad("tools must be an array", "tools");
    json::array fns;
    for (std::size_t i = 0; i < tools->get_array().size(); ++i) {
      const auto* t = tools->get_array()[i].if_object();
      if (!t || !t->contains("name") || !t->at("name").is_string() || !t->contains("input_schema"))
        return bad("a tool needs a name and an input_schema", "tools." + std::to_string(i));
      json::object fn{{"name", t->at("name")}, {"parameters", t->at("input_schema")}};
      if (t->contains("description")) fn["description"] = t->at("description");
      fns.push_back(json::object{{"type", "function"}, {"function", std::move(fn)}});
    }
    out["tools"] = std::move(fns);
  }
  const auto* choice = in.if_contains("tool_choice");
  if (!choice) return ok;
  const auto* c = choice->if_object();
  const auto* type = c ? c->if_contains("type") : nullptr;
  if (!type) return bad("tool_choice needs a type", "tool_choice.type");
  if (*type == "auto" || *type == "none") out["tool_choice"] = *type;
  else if (*type == "any") out["tool_choice"] = "required";
  else if (*type == "tool" && c->contains("name"))
    out["tool_choice"] = json::object{{"type", "function"}, {"function", json::object{{"name", c->at("name")}}}};
  else return bad("tool_choice type must be auto, any, tool (with a name) or none", "tool_choice.type");
  if (const auto* p = c->if_contains("disable_parallel_tool_use"); p && p->is_bool() && p->get_bool()) out["parallel_tool_calls"] = false;
  return ok;
}

result<void> translate_numbers(const json::object& in, json::object& out) {
  const auto* max = in.if_contains("max_tokens");
  if (!max || !max->is_int64() || max->get_int64() < 1 || max->get_int64() >= (std::int64_t{1} << 31))
    return bad("max_tokens is required: an integer from 1 to 2147483647", "max_tokens");
  out["max_tokens"] = *max;
  for (const char* name : {"temperature", "top_p"}) {
    const auto* v = in.if_contains(name);
    if (!v) continue;
    if (!number_in(*v, 0.0, 1.0)) return bad(std::string(name) + " must be a number from 0 to 1", name);
    out[name] = *v;
  }
  if (in.contains("top_k")) return bad("top_k has no equivalent on a chat-completions upstream", "top_k");
  return ok;
}

result<void> translate_messages(const json::object& in, json::object& out) {
  json::array msgs;
  if (const auto* system = in.if_contains("system")) {
    auto text = text_of(*system, "system");
    if (!text) return std::move(text).err();
    msgs.push_back(json::object{{"role", "system"}, {"content", *text}});
  }
  const auto* messages = in.if_contains("messages");
  if (!messages || !messages->is_array() || messages->get_array().empty())
    return bad("messages must be a non-empty array", "messages");
  for (std::size_t i = 0; i < messages->get_array().size(); ++i) {
    const auto* turn = messages->get_array()[i].if_object();
    const std::string param = "messages." + std::to_string(i);
    if (!turn) return bad("a message must be an object", param);
    if (auto r = append_turn(*turn, param, msgs); !r) return std::move(r).err();
  }
  out["messages"] = std::move(msgs);
  return ok;
}


// output_config.effort as chat's reasoning_effort (xhigh and max: high, chat's most).
result<void> translate_effort(const json::object& config, json::object& out) {
  const auto* effort = config.if_contains("effort");
  if (!effort || effort->is_null()) return ok;
  const std::string_view e = effort->is_string() ? std::string_view(effort->get_string()) : std::string_view{};
  if (e == "low" || e == "medium" || e == "high") out["reasoning_effort"] = e;
  else if (e == "xhigh" || e == "max") out["reasoning_effort"] = "high";
  else return bad("output_config.effort: one of low, medium, high, xhigh, max", "output_config.effort");
  return ok;
}

// output_config.format (a JSON schema the output must follow) as chat's response_format, so the
// gateway's structured outputs check it as they check a chat request's.
result<void> translate_output(const json::object& in, json::object& out) {
  const auto* cfg = in.if_contains("output_config");
  if (!cfg || cfg->is_null()) return ok;
  if (!cfg->is_object()) return bad("output_config must be an object", "output_config");
  if (auto r = translate_effort(cfg->get_object(), out); !r) return r;
  const auto* format = cfg->get_object().if_contains("format");
  if (!format || format->is_null()) return ok;
  const auto* f = format->if_object();
  const auto* type = f ? f->if_contains("type") : nullptr;
  const auto* schema = f ? f->if_contains("schema") : nullptr;
  if (!type || *type != "json_schema" || !schema || !schema->is_object())
    return bad("output_config.format: {\"type\": \"json_schema\", \"schema\": {...}}", "output_config.format");
  out["response_format"] = json::object{
      {"type", "json_schema"}, {"json_schema", json::object{{"name", "output"}, {"schema", *schema}, {"strict", true}}}};
  return ok;
}

// thinking {type: enabled, budget_tokens} as a reasoning_effort where output_config named none:
// under 4,096 tokens low, under 16,384 medium, else high. budget_tokens is checked as the
// Messages API checks it: an integer from 1,024 to below max_tokens.
result<void> translate_thinking(const json::object& in, json::object& out) {
  const auto* thinking = in.if_contains("thinking");
  if (!thinking || thinking->is_null()) return ok;
  const auto* t = thinking->if_object();
  const auto* type = t ? t->if_contains("type") : nullptr;
  if (type && *type == "disabled") return ok;
  if (!type || *type != "enabled") return bad("thinking.type: enabled or disabled", "thinking.type");
  const auto* budget = t->if_contains("budget_tokens");
  const auto max = out.at("max_tokens").to_number<std::int64_t>();
  if (!budget || !budget->is_int64() || budget->get_int64() < 1024 || budget->get_int64() >= max)
    return bad("thinking.budget_tokens: an integer from 1024 to below max_tokens", "thinking.budget_tokens");
  if (out.contains("reasoning_effort")) return ok;
  const auto b = budget->get_int64();
  out["reasoning_effort"] = b < 4096 ? "low" : b < 16384 ? "medium" : "high";
  return ok;
}

}  // namespace

result<json::object> chat_request_of(const json::object& in) {
  const auto* model = in.if_contains("model");
  if (!model || !model->is_string() || model->get_string().empty()) return bad("model is required", "model");
  json::object out{{"model", *model}};
  if (auto r = translate_messages(in, out); !r) return std::move(r).err();
  if (auto r = translate_numbers(in, out); !r) return std::move(r).err();
  if (auto r = translate_tools(in, out); !r) return std::move(r).err();
  if (auto r = translate_output(in, out); !r) return std::move(r).err();
  if (auto r = translate_thinking(in, out); !r) return std::move(r).err();
  if (const auto* stop = in.if_contains("stop_sequences")) {
    if (!stop->is_array() || stop->get_array().size() > 4) return bad("stop_sequences: at most 4 strings", "stop_sequences");
    for (const auto& s : stop->get_array())
      if (!s.is_string()) return bad("stop_sequences: at most 4 strings", "stop_sequences");
    out["stop"] = *stop;
  }
  if (const auto* stream = in.if_contains("stream"); stream && stream->is_bool() && stream->get_bool()) {
    out["stream"] = true;
    out["stream_options"] = json::object{{"include_usage", true}};
  }
  if (const auto* meta = in.if_contains("metadata"); meta && meta->is_object())
    if (const auto* user = meta->get_object().if_contains("user_id"); user && user->is_string()) out["user"] = *user;
  return out;
}

}  // namespace sluice::dialects
