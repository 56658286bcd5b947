// Structured outputs, part 3 of 4: the check of a whole (non-stream) answer and the forms a verdict
// takes (header value, event JSON, the violation error).
#include "proxy/structured/structured_output.hpp"

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <cstdint>

#include "proxy/structured/structured_output_detail.hpp"

namespace sluice::proxy {
namespace json = boost::json;

namespace output_detail {

schema::validation_error no_output(std::string why) {
  schema::validation_error e;
  e.what = schema::validation_error::kind::malformed_json;
  e.message = std::move(why);
  return e;
}

}  // namespace output_detail

namespace {

// The model's output text of the Responses API's whole answer (output_text parts of the output
// messages, joined as the SDKs' output_text does); nullopt when there is none.
std::optional<std::string> responses_output_text(const json::object& o) {
  const json::value* output = o.if_contains("output");
  if (!output || !output->is_array()) return std::nullopt;
  std::optional<std::string> text;
  for (const auto& item : output->get_array()) {
    if (!item.is_object()) continue;
    const json::value* type = item.get_object().if_contains("type");
    const json::value* content = item.get_object().if_contains("content");
    if (!type || *type != "message" || !content || !content->is_array()) continue;
    for (const auto& part : content->get_array()) {
      if (!part.is_object()) continue;
      const json::value* pt = part.get_object().if_contains("type");
      const json::value* t = part.get_object().if_contains("text");
      if (pt && *pt == "output_text" && t && t->is_string()) {
        if (!text) text.emplace();
        text->append(t->get_string().data(), t->get_string().size());
      }
    }
  }
  return text;
}

// A Responses answer that calls a tool: a function_call item in `output`.
bool responses_calls_tool(const json::object& o) {
  const json::value* output = o.if_contains("output");
  if (!output || !output->is_array()) return false;
  for (const auto& item : output->get_array())
    if (item.is_object())
      if (const json::value* type = item.get_object().if_contains("type"); type && *type == "function_call") return true;
  return false;
}

// A chat choice that calls a tool: a non-empty `message.tool_calls`.
bool choice_calls_tool(api which, const json::value& choice) {
  if (which != api::chat_completions || !choice.is_object()) return false;
  const json::value* message = choice.get_object().if_contains("message");
  if (!message || !message->is_object()) return false;
  const json::value* calls = message->get_object().if_contains("tool_calls");
  return calls && calls->is_array() && !calls->get_array().empty();
}

// One choice's output text: chat `message.content`, completions `text`; null when it has none.
const json::string* choice_text(api which, const json::value& choice) {
  if (!choice.is_object()) return nullptr;
  const json::value* text = nullptr;
  if (which == api::completions) {
    text = choice.get_object().if_contains("text");
  } else {
    const json::value* message = choice.get_object().if_contains("message");
    if (!message || !message->is_object()) return nullptr;
    text = message->get_object().if_contains("content");
  }
  return text && text->is_string() ? &text->get_string() : nullptr;
}

// The `index` a choice gives itself; its position when it gives none.
std::uint32_t choice_index(const json::value& choice, std::size_t position) {
  if (choice.is_object())
    if (const json::value* i = choice.get_object().if_contains("index"); i && i->is_int64() && i->get_int64() >= 0 &&
                                                                          i->get_int64() <= UINT32_MAX)
      return static_cast<std::uint32_t>(i->get_int64());
  return static_cast<std::uint32_t>(position);
}

}  // namespace

using output_detail::no_output;

output_verdict check_whole(const output_contract& c, std::string_view body) {
  unsigned char stack[4096];
  json::monotonic_resource mr(stack, sizeof stack);
  boost::system::error_code ec;
  json::value v = json::parse(body, ec, &mr);
  output_verdict out;
  if (ec || !v.is_object()) {
    out.error = no_output(ec ? "the upstream answer is not JSON" : "the upstream answer is not a JSON object");
    return out;
  }
  const auto& o = v.get_object();
  if (c.which == api::responses) {
    if (responses_calls_tool(o)) {
      out.tool_calls = true;
      return out;
    }
    auto text = responses_output_text(o);
    out.error = text ? c.schema->validate_text(*text) : no_output("the upstream answer has no output text");
    return out;
  }
  const json::value* choices = o.if_contains("choices");
  if (!choices || !choices->is_array() || choices->get_array().empty()) {
    out.error = no_output("the upstream answer has no choices");
    return out;
  }
  const auto& arr = choices->get_array();
  std::size_t judged = 0;
  for (std::size_t i = 0; i < arr.size(); ++i) {
    if (choice_calls_tool(c.which, arr[i])) continue;  // the schema governs text answers only
    ++judged;
    const std::uint32_t index = choice_index(arr[i], i);
    const json::string* text = choice_text(c.which, arr[i]);
    out.error = text ? c.schema->validate_text(std::string_view(text->data(), text->size()))
                     : no_output("the upstream answer has no output text");
    if (out.error) {
      if (c.choices > 1 || arr.size() > 1 || index != 0) out.choice = index;
      return out;
    }
  }
  out.tool_calls = judged == 0;
  return out;
}

std::string verdict_header_value(const output_verdict& v) {
  if (!v.error && v.tool_calls) return "skipped; tool_calls";
  return verdict_header_value(v.error, v.choice);
}

std::string verdict_json(const output_verdict& v) {
  if (!v.error && v.tool_calls) return R"({"valid":true,"skipped":"tool_calls"})";
  return verdict_json(v.error, v.choice);
}

std::string verdict_header_value(const schema::verdict& v, std::optional<std::uint32_t> choice) {
  if (!v) return "valid";
  std::string raw = "invalid; ";
  if (choice) raw += "choice=" + std::to_string(*choice) + "; ";
  raw += "path=" + v->instance_path + "; " + v->message;
  constexpr std::size_t max_len = 512;
  std::string out;
  out.reserve(std::min(raw.size(), max_len));
  for (char ch : raw) {
    if (out.size() >= max_len) break;
    auto c = static_cast<unsigned char>(ch);
    out.push_back(c >= 0x20 && c < 0x7f ? ch : '?');  // no CR/LF/controls/non-ASCII in a header
  }
  return out;
}

std::string verdict_json(const schema::verdict& v, std::optional<std::uint32_t> choice) {
  json::object o;
  o["valid"] = !v.has_value();
  if (v) {
    if (choice) o["choice"] = *choice;
    o["instance_path"] = v->instance_path;
    o["schema_path"] = v->schema_path;
    o["message"] = v->message;
  }
  return json::serialize(o);
}

error violation_error(const schema::validation_error& v, std::optional<std::uint32_t> choice) {
  error e = schema::to_error(v);
  e.code = errc::upstream_protocol;
  e.api_code = "schema_violation";
  std::string where = v.instance_path.empty() ? std::string("the document root") : "'" + v.instance_path + "'";
  std::string whose = choice ? "The model's output in choice " + std::to_string(*choice) : std::string("The model's output");
  e.message = whose + " does not match the response schema at " + where + ": " + v.message;
  e.param = v.instance_path;
  return e;
}

}  // namespace sluice::proxy
