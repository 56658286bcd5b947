#include "dialects/anthropic_upstream_request_fields.hpp"
#include "dialects/anthropic_upstream_turns.hpp"

#include <string_view>

namespace sluice::dialects {

namespace json = boost::json;

result<json::object> messages_body_with_model(const json::object& in) {
  const auto* model = in.if_contains("model");
  if (!model || !model->is_string() || model->get_string().empty()) return refused("model is required", "model");
  return json::object{{"model", *model}};
}

result<void> copy_max_tokens(const json::object& in, std::initializer_list<const char*> names, std::uint64_t default_max_tokens,
                             json::object& out) {
  out["max_tokens"] = default_max_tokens;
  for (const char* name : names) {  // the later one wins
    const auto* v = present(in, name);
    if (!v) continue;
    if (!v->is_int64() || v->get_int64() < 1 || v->get_int64() >= (std::int64_t{1} << 31))
      return refused(std::string(name) + " must be an integer from 1 to 2147483647", name);
    out["max_tokens"] = *v;
  }
  return ok;
}

result<void> copy_temperature_and_top_p(const json::object& in, json::object& out) {
  for (const char* name : {"temperature", "top_p"}) {
    const auto* v = present(in, name);
    if (!v) continue;
    const double d = v->is_number() ? v->to_number<double>() : -1.0;
    if (!(d >= 0.0 && d <= 1.0)) return refused(std::string(name) + " must be a number from 0 to 1 (the Messages API's range)", name);
    out[name] = *v;
  }
  return ok;
}

result<json::object> messages_tool_of(const json::object& fn, const std::string& param) {
  const auto* name = fn.if_contains("name");
  if (!name || !name->is_string() || name->get_string().empty()) return refused("a function tool needs a name", param + ".name");
  json::object out{{"name", *name}};
  if (const auto* d = present(fn, "description")) {
    if (!d->is_string()) return refused("a description must be a string", param + ".description");
    out["description"] = *d;
  }
  const auto* parameters = present(fn, "parameters");
  if (parameters && !parameters->is_object()) return refused("parameters must be a JSON Schema object", param + ".parameters");
  out["input_schema"] = parameters ? *parameters : json::value(json::object{{"type", "object"}});
  return out;
}

const char* messages_tool_choice_type(const json::value& choice) noexcept {
  if (choice == "auto") return "auto";
  if (choice == "required") return "any";
  if (choice == "none") return "none";
  return nullptr;
}

result<void> copy_tools(const json::object& in, tool_reader tool, tool_choice_reader choice_of, json::object& out) {
  const auto* tools = present(in, "tools");
  if (tools && !tools->is_array()) return refused("tools must be an array", "tools");
  json::array carried;
  for (std::size_t i = 0; tools && i < tools->get_array().size(); ++i) {
    auto t = tool(tools->get_array()[i], "tools." + std::to_string(i));
    if (!t) return std::move(t).err();
    carried.push_back(std::move(*t));
  }
  const auto* choice_in = present(in, "tool_choice");
  auto choice = choice_in ? choice_of(*choice_in) : result<json::object>(json::object{{"type", "auto"}});
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

result<void> add_effort(const json::value& effort, const char* param, json::object& config) {
  const std::string_view e = effort.is_string() ? std::string_view(effort.get_string()) : std::string_view{};
  if (e == "minimal" || e == "low") config["effort"] = "low";
  else if (e == "medium" || e == "high" || e == "xhigh") config["effort"] = e;
  else return refused(std::string(param) + ": minimal, low, medium, high or xhigh", param);
  return ok;
}

result<void> copy_stream_and_user(const json::object& in, json::object& out) {
  if (const auto* stream = present(in, "stream")) {
    if (!stream->is_bool()) return refused("stream must be a boolean", "stream");
    if (stream->get_bool()) out["stream"] = true;
  }
  if (const auto* user = present(in, "user")) {
    if (!user->is_string()) return refused("user must be a string", "user");
    if (!user->get_string().empty()) out["metadata"] = json::object{{"user_id", *user}};
  }
  return ok;
}

}  // namespace sluice::dialects
