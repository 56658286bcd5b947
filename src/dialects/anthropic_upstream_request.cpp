#include "dialects/anthropic_upstream_request.hpp"
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

// max_completion_tokens (OpenAI's current name) or else max_tokens, each checked when present;
// neither: the configured default.
result<void> copy_max_tokens(const json::object& in, const messages_request_options& opts, json::object& out) {
  out["max_tokens"] = opts.default_max_tokens;
  for (const char* name : {"max_tokens", "max_completion_tokens"}) {  // the later one wins
    const auto* v = present(in, name);
    if (!v) continue;
    if (!v->is_int64() || v->get_int64() < 1 || v->get_int64() >= (std::int64_t{1} << 31))
      return refused(std::string(name) + " must be an integer from 1 to 2147483647", name);
    out["max_tokens"] = *v;
  }
  return ok;
}

result<void> copy_sampling(const json::object& in, json::object& out) {
  for (const char* name : {"temperature", "top_p"}) {
    const auto* v = present(in, name);
    if (!v) continue;
    const double d = v->is_number() ? v->to_number<double>() : -1.0;
    if (!(d >= 0.0 && d <= 1.0)) return refused(std::string(name) + " must be a number from 0 to 1 (the Messages API's range)", name);
    out[name] = *v;
  }
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

result<json::object> tool_of(const json::value& t, const std::string& param) {
  const auto* tool = t.if_object();
  if (!tool) return refused("a tool must be an object", param);
  if (const auto* type = tool->if_contains("type"); !type || *type != "function")
    return refused("only function tools can be carried to an Anthropic upstream", param + ".type");
  const auto* fn = tool->if_contains("function");
  const auto* name = fn && fn->is_object() ? fn->get_object().if_contains("name") : nullptr;
  if (!name || !name->is_string() || name->get_string().empty()) return refused("a function tool needs a name", param + ".function.name");
  json::object out{{"name", *name}};
  if (const auto* d = present(fn->get_object(), "description")) {
    if (!d->is_string()) return refused("a description must be a string", param + ".function.description");
    out["description"] = *d;
  }
  const auto* parameters = present(fn->get_object(), "parameters");
  if (parameters && !parameters->is_object()) return refused("parameters must be a JSON Schema object", param + ".function.parameters");
  out["input_schema"] = parameters ? *parameters : json::value(json::object{{"type", "object"}});
  return out;
}

// "auto" / "required" / "none" / {"type":"function","function":{"name"}} as the Messages API's
// {"type": auto / any / none / tool (with the name)}.
result<json::object> tool_choice_of(const json::value& choice) {
  if (choice == "auto") return json::object{{"type", "auto"}};
  if (choice == "required") return json::object{{"type", "any"}};
  if (choice == "none") return json::object{{"type", "none"}};
  const auto* c = choice.if_object();
  const auto* fn = c && c->contains("type") && c->at("type") == "function" ? c->if_contains("function") : nullptr;
  const auto* name = fn && fn->is_object() ? fn->get_object().if_contains("name") : nullptr;
  if (!name || !name->is_string())
    return refused("tool_choice: auto, required, none, or {\"type\":\"function\",\"function\":{\"name\":...}}", "tool_choice");
  return json::object{{"type", "tool"}, {"name", *name}};
}

// tools, tool_choice and parallel_tool_calls. Without tools the other two are checked and dropped
// (the Messages API refuses a tool_choice without tools).
result<void> copy_tools(const json::object& in, json::object& out) {
  const auto* tools = present(in, "tools");
  if (tools && !tools->is_array()) return refused("tools must be an array", "tools");
  json::array carried;
  for (std::size_t i = 0; tools && i < tools->get_array().size(); ++i) {
    auto tool = tool_of(tools->get_array()[i], "tools." + std::to_string(i));
    if (!tool) return std::move(tool).err();
    carried.push_back(std::move(*tool));
  }
  const auto* choice_in = present(in, "tool_choice");
  auto choice = choice_in ? tool_choice_of(*choice_in) : result<json::object>(json::object{{"type", "auto"}});
  if (!choice) return std::move(choice).err();
  const auto* parallel = present(in, "parallel_tool_calls");
  if (parallel && !parallel->is_bool()) return refused("parallel_tool_calls must be a boolean", "parallel_tool_calls");
  if (carried.empty()) return ok;
  out["tools"] = std::move(carried);
  const bool serial = parallel && !parallel->get_bool();
  if (serial && choice->at("type") != "none") (*choice)["disable_parallel_tool_use"] = true;
  if (choice_in || serial) out["tool_choice"] = std::move(*choice);
  return ok;
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
  if (const auto* effort = present(in, "reasoning_effort")) {
    const std::string_view e = effort->is_string() ? std::string_view(effort->get_string()) : std::string_view{};
    if (e == "minimal" || e == "low") config["effort"] = "low";
    else if (e == "medium" || e == "high" || e == "xhigh") config["effort"] = e;
    else return refused("reasoning_effort: minimal, low, medium, high or xhigh", "reasoning_effort");
  }
  if (!config.empty()) out["output_config"] = std::move(config);
  return ok;
}

}  // namespace

result<json::object> messages_request_of(const json::object& in, const messages_request_options& opts) {
  const auto* model = in.if_contains("model");
  if (!model || !model->is_string() || model->get_string().empty()) return refused("model is required", "model");
  json::object out{{"model", *model}};
  if (auto r = refuse_unsupported(in); !r) return std::move(r).err();
  if (auto r = translate_chat_messages(in.if_contains("messages"), out); !r) return std::move(r).err();
  if (auto r = copy_max_tokens(in, opts, out); !r) return std::move(r).err();
  if (auto r = copy_sampling(in, out); !r) return std::move(r).err();
  if (auto r = copy_tools(in, out); !r) return std::move(r).err();
  if (auto r = copy_output_config(in, out); !r) return std::move(r).err();
  if (const auto* stream = present(in, "stream")) {
    if (!stream->is_bool()) return refused("stream must be a boolean", "stream");
    if (stream->get_bool()) out["stream"] = true;
  }
  if (const auto* user = present(in, "user")) {
    if (!user->is_string()) return refused("user must be a string", "user");
    if (!user->get_string().empty()) out["metadata"] = json::object{{"user_id", *user}};
  }
  return out;  // stream_options, store, metadata, service_tier and any other member: not carried
}

}  // namespace sluice::dialects
