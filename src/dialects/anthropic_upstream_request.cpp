#include "dialects/anthropic_upstream_request.hpp"
#include "dialects/anthropic_upstream_request_fields.hpp"
#include "dialects/anthropic_upstream_turns.hpp"

#include <boost/json/value.hpp>
#include <string>
#include <string_view>

namespace sluice::dialects {

namespace json = boost::json;

namespace {

// A field the Messages API has no way to carry: refused when the client sets it to anything but
// its default (null is always the default), so the client learns it was not honoured.
struct unsupported_field {
  const char* name;
  bool (*is_default)(const json::value&);
  const char* why;
};

bool never_default(const json::value&) { return false; }
bool is_one(const json::value& v) { return v.is_int64() && v.get_int64() == 1; }
bool is_false(const json::value& v) { return v.is_bool() && !v.get_bool(); }
bool is_zero(const json::value& v) { return v.is_number() && v.to_number<double>() == 0.0; }
bool is_empty_object(const json::value& v) { return v.is_object() && v.get_object().empty(); }
bool is_text_only(const json::value& v) {
  return v.is_array() && v.get_array().size() == 1 && v.get_array()[0] == "text";
}

constexpr unsupported_field unsupported_fields[] = {
    {"n", is_one, "the Messages API returns one choice"},
    {"logprobs", is_false, "the Messages API returns no log probabilities"},
    {"top_logprobs", never_default, "the Messages API returns no log probabilities"},
    {"frequency_penalty", is_zero, "the Messages API has no frequency penalty"},
    {"presence_penalty", is_zero, "the Messages API has no presence penalty"},
    {"logit_bias", is_empty_object, "the Messages API has no logit bias"},
    {"seed", never_default, "the Messages API has no seed"},
    {"audio", never_default, "the Messages API has no audio output"},
    {"modalities", is_text_only, "the Messages API answers in text only"},
    {"prediction", never_default, "the Messages API has no predicted outputs"},
    {"functions", never_default, "deprecated functions are not carried; use tools"},
    {"function_call", never_default, "deprecated function_call is not carried; use tool_choice"},
    {"web_search_options", never_default, "web search is not carried to an Anthropic upstream"},
};

result<void> refuse_unsupported(const json::object& in) {
  for (const auto& f : unsupported_fields)
    if (const auto* v = present(in, f.name); v && !f.is_default(*v)) return refused(std::string(f.name) + ": " + f.why, f.name);
  return ok;
}

// stop: a string or at most 4 strings, as stop_sequences.
result<void> copy_stop(const json::object& in, json::object& out) {
  const auto* stop = present(in, "stop");
  if (!stop) return ok;
  json::array sequences;
  if (stop->is_string()) sequences.push_back(*stop);
  else if (stop->is_array() && stop->get_array().size() <= 4) sequences = stop->get_array();
  else return refused("stop must be a string or an array of at most 4 strings", "stop");
  for (const auto& s : sequences)
    if (!s.is_string()) return refused("stop must be a string or an array of at most 4 strings", "stop");
  if (!sequences.empty()) out["stop_sequences"] = std::move(sequences);
  return ok;
}

// A chat tool: {"type":"function","function":{"name","description","parameters"}}.
result<json::object> tool_of(const json::value& t, const std::string& param) {
  const auto* tool = t.if_object();
  if (!tool) return refused("a tool must be an object", param);
  if (const auto* type = tool->if_contains("type"); !type || *type != "function")
    return refused("only function tools can be carried to an Anthropic upstream", param + ".type");
  const auto* fn = tool->if_contains("function");
  if (!fn || !fn->is_object()) return refused("a function tool needs a name", param + ".function.name");
  return messages_tool_of(fn->get_object(), param + ".function");
}

// "auto" / "required" / "none" / {"type":"function","function":{"name"}} as the Messages API's
// {"type": auto / any / none / tool (with the name)}.
result<json::object> tool_choice_of(const json::value& choice) {
  if (const char* type = messages_tool_choice_type(choice)) return json::object{{"type", type}};
  const auto* c = choice.if_object();
  const auto* fn = c && c->contains("type") && c->at("type") == "function" ? c->if_contains("function") : nullptr;
  const auto* name = fn && fn->is_object() ? fn->get_object().if_contains("name") : nullptr;
  if (!name || !name->is_string())
    return refused("tool_choice: auto, required, none, or {\"type\":\"function\",\"function\":{\"name\":...}}", "tool_choice");
  return json::object{{"type", "tool"}, {"name", *name}};
}

// response_format and reasoning_effort, both carried in the Messages API's output_config.
result<void> copy_output_config(const json::object& in, json::object& out) {
  json::object config;
  if (const auto* format = present(in, "response_format")) {
    const auto* f = format->if_object();
    const auto* type = f ? f->if_contains("type") : nullptr;
    if (!type || (*type != "text" && *type != "json_schema"))
      return refused("response_format.type: text or json_schema (json_object has no Messages equivalent)", "response_format.type");
    if (*type == "json_schema") {
      const auto* spec = f->if_contains("json_schema");
      const auto* schema = spec && spec->is_object() ? spec->get_object().if_contains("schema") : nullptr;
      if (!schema || !schema->is_object()) return refused("response_format.json_schema.schema must be an object", "response_format.json_schema.schema");
      config["format"] = json::object{{"type", "json_schema"}, {"schema", *schema}};
    }
  }
  if (const auto* effort = present(in, "reasoning_effort"))
    if (auto r = add_effort(*effort, "reasoning_effort", config); !r) return r;
  if (!config.empty()) out["output_config"] = std::move(config);
  return ok;
}

}  // namespace

result<json::object> messages_request_of(const json::object& in, const messages_request_options& opts) {
  auto body = messages_body_with_model(in);
  if (!body) return body;
  auto& out = *body;
  if (auto r = refuse_unsupported(in); !r) return std::move(r).err();
  if (auto r = translate_chat_messages(in.if_contains("messages"), out); !r) return std::move(r).err();
  if (auto r = copy_max_tokens(in, {"max_tokens", "max_completion_tokens"}, opts.default_max_tokens, out); !r) return std::move(r).err();
  if (auto r = copy_temperature_and_top_p(in, out); !r) return std::move(r).err();
  if (auto r = copy_stop(in, out); !r) return std::move(r).err();
  if (auto r = copy_tools(in, tool_of, tool_choice_of, out); !r) return std::move(r).err();
  if (auto r = copy_output_config(in, out); !r) return std::move(r).err();
  if (auto r = copy_stream_and_user(in, out); !r) return std::move(r).err();
  return body;  // stream_options, store, metadata, service_tier and any other member: not carried
}

}  // namespace sluice::dialects
