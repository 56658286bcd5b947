#include "dialects/anthropic_upstream_responses_request.hpp"
#include "dialects/anthropic_upstream_request_fields.hpp"
#include "dialects/anthropic_upstream_responses_input.hpp"
#include "dialects/anthropic_upstream_turns.hpp"

#include <boost/json/value.hpp>
#include <string>
#include <string_view>

namespace sluice::dialects {

namespace json = boost::json;

namespace {

constexpr std::string_view no_state = ": an Anthropic upstream keeps no conversation state; send the whole conversation as input";

// Fields refused whatever their value (null aside): honouring them needs what the upstream lacks.
constexpr std::pair<const char*, std::string_view> refused_fields[] = {
    {"previous_response_id", no_state},
    {"conversation", no_state},
    {"top_logprobs", ": the Messages API returns no log probabilities"},
    {"prompt", ": prompt templates are kept by OpenAI; an Anthropic upstream cannot read them"},
};

// A Responses function tool: {"type":"function","name","description","parameters","strict"}.
result<json::object> responses_tool_of(const json::value& t, const std::string& param) {
  const auto* tool = t.if_object();
  if (!tool) return refused("a tool must be an object", param);
  if (const auto* type = tool->if_contains("type"); !type || *type != "function")
    return refused("only function tools can be carried to an Anthropic upstream (no hosted tools)", param + ".type");
  return messages_tool_of(*tool, param);
}

// "auto" / "required" / "none" / {"type":"function","name"} as the Messages API's tool_choice.
result<json::object> responses_tool_choice_of(const json::value& choice) {
  if (const char* type = messages_tool_choice_type(choice)) return json::object{{"type", type}};
  const auto* c = choice.if_object();
  const auto* name = c && c->contains("type") && c->at("type") == "function" ? c->if_contains("name") : nullptr;
  if (!name || !name->is_string())
    return refused("tool_choice: auto, required, none, or {\"type\":\"function\",\"name\":...}", "tool_choice");
  return json::object{{"type", "tool"}, {"name", *name}};
}

// text.format (text: nothing; json_schema: output_config.format), verbosity dropped.
result<void> add_text_format(const json::object& in, json::object& config) {
  const auto* text = present(in, "text");
  if (text && !text->is_object()) return refused("text must be an object", "text");
  const auto* format = text ? present(text->get_object(), "format") : nullptr;
  if (!format) return ok;
  const auto* f = format->if_object();
  const auto* type = f ? f->if_contains("type") : nullptr;
  if (!type || (*type != "text" && *type != "json_schema"))
    return refused("text.format.type: text or json_schema (json_object has no Messages equivalent)", "text.format.type");
  if (*type == "text") return ok;
  const auto* schema = f->if_contains("schema");
  if (!schema || !schema->is_object()) return refused("text.format.schema must be an object", "text.format.schema");
  config["format"] = json::object{{"type", "json_schema"}, {"schema", *schema}};
  return ok;
}

// reasoning.effort as output_config.effort; reasoning.summary dropped.
result<void> add_reasoning_effort(const json::object& in, json::object& config) {
  const auto* reasoning = present(in, "reasoning");
  if (reasoning && !reasoning->is_object()) return refused("reasoning must be an object", "reasoning");
  const auto* effort = reasoning ? present(reasoning->get_object(), "effort") : nullptr;
  return effort ? add_effort(*effort, "reasoning.effort", config) : result<void>(ok);
}

// text.format and reasoning.effort, both carried in the Messages API's output_config.
result<void> copy_responses_output_config(const json::object& in, json::object& out) {
  json::object config;
  auto r = add_text_format(in, config);
  if (r) r = add_reasoning_effort(in, config);
  if (r && !config.empty()) out["output_config"] = std::move(config);
  return r;
}

}  // namespace

result<json::object> messages_request_of_responses(const json::object& in, const messages_request_options& opts) {
  auto body = messages_body_with_model(in);
  if (!body) return body;
  for (const auto& [name, why] : refused_fields)
    if (present(in, name)) return refused(name + std::string(why), name);
  auto& out = *body;
  if (auto r = translate_responses_input(in, out); !r) return std::move(r).err();
  if (auto r = copy_max_tokens(in, {"max_output_tokens"}, opts.default_max_tokens, out); !r) return std::move(r).err();
  if (auto r = copy_temperature_and_top_p(in, out); !r) return std::move(r).err();
  if (auto r = copy_tools(in, responses_tool_of, responses_tool_choice_of, out); !r) return std::move(r).err();
  if (auto r = copy_responses_output_config(in, out); !r) return std::move(r).err();
  if (auto r = copy_stream_and_user(in, out); !r) return std::move(r).err();
  // background, store, metadata, include, truncation, service_tier, stream_options,
  // safety_identifier, prompt_cache_key, max_tool_calls and any other member: not carried.
  return body;
}

}  // namespace sluice::dialects
