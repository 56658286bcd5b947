#include "proxy/request_validation.hpp"

#include <algorithm>
#include <cmath>

#include <boost/json/error.hpp>
#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include "proxy/duplicate_members.hpp"
#include "proxy/structured/structured_output.hpp"

namespace sluice::proxy {
namespace json = boost::json;

namespace {

error bad(std::string msg, std::string param) { return error::make(errc::bad_request, std::move(msg), std::move(param)); }

std::string_view kind_of(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null: return "null";
    case json::kind::bool_: return "a boolean";
    case json::kind::int64:
    case json::kind::uint64: return "an integer";
    case json::kind::double_: return "a number";
    case json::kind::string: return "a string";
    case json::kind::array: return "an array";
    case json::kind::object: return "an object";
  }
  return "a value";
}

error wrong_type(const std::string& param, std::string_view expected, const json::value& got) {
  return bad("Invalid type for '" + param + "': expected " + std::string(expected) + ", but got " +
                 std::string(kind_of(got)) + ".",
             param);
}

// Optional fields: absent or null is fine; otherwise the type must match.
bool is_uint(const json::value& v) {
  return v.is_uint64() || (v.is_int64() && v.get_int64() >= 0) ||
         (v.is_double() && v.get_double() >= 0 && v.get_double() == static_cast<double>(static_cast<std::uint64_t>(v.get_double())));
}

std::uint64_t as_uint(const json::value& v) {
  if (v.is_uint64()) return v.get_uint64();
  if (v.is_int64()) return static_cast<std::uint64_t>(v.get_int64());
  return static_cast<std::uint64_t>(v.get_double());
}

std::size_t text_size(const json::value& v) {
  if (v.is_string()) return v.get_string().size();
  std::size_t n = 0;
  if (v.is_array())
    for (auto& e : v.get_array()) n += text_size(e);
  if (v.is_object())
    for (auto& kv : v.get_object()) n += text_size(kv.value());
  return n;
}

// A step of a value's path: a member name or an array index.
struct path_step {
  std::string_view key;
  std::size_t index = 0;
  bool is_index = false;
};

// Whether `v` holds a number that is not finite, leaving the steps to the first one in `rev`,
// innermost first. Only the numbers a parse gives as doubles can be; depth is bounded by the parse.
bool non_finite_at(const json::value& v, std::vector<path_step>& rev) {
  switch (v.kind()) {
    case json::kind::double_: return !std::isfinite(v.get_double());
    case json::kind::array: {
      const auto& a = v.get_array();
      for (std::size_t i = 0; i < a.size(); ++i)
        if (non_finite_at(a[i], rev)) {
          rev.push_back({{}, i, true});
          return true;
        }
      return false;
    }
    case json::kind::object:
      for (const auto& kv : v.get_object())
        if (non_finite_at(kv.value(), rev)) {
          rev.push_back({std::string_view(kv.key().data(), kv.key().size())});
          return true;
        }
      return false;
    default: return false;
  }
}

// The path in the form OpenAI's `param` uses: `messages[0].content`.
std::string param_of(const std::vector<path_step>& rev) {
  std::string out;
  for (auto it = rev.rbegin(); it != rev.rend(); ++it) {
    if (it->is_index) {
      // Appended piece by piece: `"[" + std::to_string(...)` inserts at the front of the number,
      // which GCC 12 at -O3 misreads as an overflow (-Wstringop-overflow).
      out += '[';
      out += std::to_string(it->index);
      out += ']';
    } else {
      if (!out.empty()) out += '.';
      out += it->key;
    }
  }
  return out;
}

// Function tools' parameter schemas (chat: tools[i].function.parameters; responses:
// tools[i].parameters), copied out of the caller's short-lived parse. Tools of other types have
// none and pass unchecked, as does a tool without a `type` (the upstream judges those).
result<std::vector<tool_schema_request>> tool_schemas(api which, const json::object& obj) {
  std::vector<tool_schema_request> out;
  const json::value* tools = obj.if_contains("tools");
  // Legacy completions have none; count_tokens' are the Messages API's (input_schema), checked upstream.
  if (which == api::completions || which == api::count_tokens || !tools || tools->is_null()) return out;
  if (!tools->is_array()) return wrong_type("tools", "an array", *tools);
  const auto& arr = tools->get_array();
  for (std::size_t i = 0; i < arr.size(); ++i) {
    std::string p = "tools[" + std::to_string(i) + "]";
    if (!arr[i].is_object()) return wrong_type(p, "an object", arr[i]);
    const json::object* fn = &arr[i].get_object();
    const json::value* type = fn->if_contains("type");
    if (type && !type->is_string()) return wrong_type(p + ".type", "a string", *type);
    if (!type || type->get_string() != "function") continue;
    if (which == api::chat_completions) {
      const json::value* f = fn->if_contains("function");
      if (!f) return bad("Missing required parameter: '" + p + ".function'.", p + ".function");
      if (!f->is_object()) return wrong_type(p + ".function", "an object", *f);
      fn = &f->get_object();
      p += ".function";
    }
    const json::value* params = fn->if_contains("parameters");
    if (!params || params->is_null()) continue;  // a function without parameters takes none
    if (!params->is_object() && !params->is_bool()) return wrong_type(p + ".parameters", "an object", *params);
    tool_schema_request t;
    t.schema = json::value(*params, json::storage_ptr());  // out of the caller's short-lived parse
    t.param = p + ".parameters";
    if (const json::value* name = fn->if_contains("name"); name && name->is_string()) t.name = std::string(name->get_string());
    out.push_back(std::move(t));
  }
  return out;
}

// Embeddings: `input` a string, an array of tokens, or an array of strings or token arrays (at
// most 2,048 of them, none empty); `dimensions` a positive integer; `encoding_format` float or
// base64; never streamed. The prompt's size is its text's (a token counts 4 bytes).
std::optional<error> embedding_fields(const json::object& obj, request_summary& out) {
  const json::value* input = obj.if_contains("input");
  if (!input) return bad("Missing required parameter: 'input'.", "input");
  if (!input->is_string() && !input->is_array()) return wrong_type("input", "a string or an array", *input);
  if (input->is_array()) {
    const auto& arr = input->get_array();
    if (arr.empty() || arr.size() > 2048) return bad("Invalid 'input': an array of 1 to 2048 items.", "input");
    for (std::size_t i = 0; i < arr.size(); ++i) {
      const auto& item = arr[i];
      const bool ok = item.is_string() || (is_uint(item) && arr[0].is_number()) || (item.is_array() && !item.get_array().empty());
      if (!ok) return wrong_type("input[" + std::to_string(i) + "]", "a string, a token or a non-empty array of tokens", item);
      if (item.is_array())
        for (const auto& t : item.get_array())
          if (!is_uint(t)) return wrong_type("input[" + std::to_string(i) + "]", "an array of tokens (non-negative integers)", t);
      out.prompt_chars += item.is_string() ? item.get_string().size() : item.is_array() ? 4 * item.get_array().size() : 4;
    }
  } else {
    out.prompt_chars = input->get_string().size();
  }
  if (const json::value* d = obj.if_contains("dimensions"); d && !d->is_null() && (!is_uint(*d) || as_uint(*d) == 0))
    return wrong_type("dimensions", "a positive integer", *d);
  if (const json::value* f = obj.if_contains("encoding_format"); f && !f->is_null() && *f != "float" && *f != "base64")
    return bad("Invalid 'encoding_format': expected 'float' or 'base64'.", "encoding_format");
  if (const json::value* s = obj.if_contains("stream"); s && !s->is_null() && !(s->is_bool() && !s->get_bool()))
    return bad("Embeddings are not streamed: leave out 'stream'.", "stream");
  return std::nullopt;
}

// Moderations: `input` a string, an array of strings, or an array of content parts (`text` with
// its text, `image_url` with its URL); never streamed.
std::optional<error> moderation_fields(const json::object& obj, request_summary& out) {
  const json::value* input = obj.if_contains("input");
  if (!input) return bad("Missing required parameter: 'input'.", "input");
  if (input->is_string()) {
    out.prompt_chars = input->get_string().size();
  } else if (input->is_array() && !input->get_array().empty()) {
    const auto& arr = input->get_array();
    for (std::size_t i = 0; i < arr.size(); ++i) {
      const std::string p = "input[" + std::to_string(i) + "]";
      const auto* part = arr[i].if_object();
      const auto* type = part ? part->if_contains("type") : nullptr;
      const bool text = type && *type == "text" && part->contains("text") && part->at("text").is_string();
      const bool image = type && *type == "image_url" && part->contains("image_url") && part->at("image_url").is_object();
      if (!arr[i].is_string() && !text && !image)
        return wrong_type(p, "a string, a text part or an image_url part", arr[i]);
      out.prompt_chars += arr[i].is_string() ? arr[i].get_string().size() : text ? part->at("text").get_string().size() : 0;
    }
  } else {
    return wrong_type("input", "a string or a non-empty array", *input);
  }
  if (const json::value* s = obj.if_contains("stream"); s && !s->is_null() && !(s->is_bool() && !s->get_bool()))
    return bad("Moderations are not streamed: leave out 'stream'.", "stream");
  return std::nullopt;
}

// The prompt of each API: chat `messages` (each an object with a string `role`), responses
// `input` (and `max_output_tokens`), completions `prompt`; their size for the cost estimate.
std::optional<error> prompt_fields(api which, const json::object& obj, request_summary& out) {
  if (which == api::embeddings) return embedding_fields(obj, out);
  if (which == api::moderations) return moderation_fields(obj, out);
  if (which == api::chat_completions || which == api::count_tokens) {
    const json::value* messages = obj.if_contains("messages");
    if (!messages) return bad("Missing required parameter: 'messages'.", "messages");
    if (!messages->is_array()) return wrong_type("messages", "an array", *messages);
    const auto& arr = messages->get_array();
    if (arr.empty()) return bad("Invalid 'messages': empty array. Expected an array with minimum length 1.", "messages");
    for (std::size_t i = 0; i < arr.size(); ++i) {
      std::string p = "messages[" + std::to_string(i) + "]";
      if (!arr[i].is_object()) return wrong_type(p, "an object", arr[i]);
      const json::value* role = arr[i].get_object().if_contains("role");
      if (!role) return bad("Missing required parameter: '" + p + ".role'.", p + ".role");
      if (!role->is_string()) return wrong_type(p + ".role", "a string", *role);
    }
    out.prompt_chars = text_size(*messages);
  } else if (which == api::responses) {
    const json::value* input = obj.if_contains("input");
    if (input && !input->is_null() && !input->is_string() && !input->is_array())
      return wrong_type("input", "a string or an array", *input);
    if (input) out.prompt_chars = text_size(*input);
    if (const json::value* prev = obj.if_contains("previous_response_id"); prev && !prev->is_null()) {
      if (!prev->is_string()) return wrong_type("previous_response_id", "a string", *prev);
      out.previous_response_id = std::string(prev->get_string());
    }
    if (const json::value* v = obj.if_contains("max_output_tokens"); v && !v->is_null()) {
      if (!is_uint(*v)) return wrong_type("max_output_tokens", "a non-negative integer", *v);
      out.max_tokens = as_uint(*v);
    }
  } else {
    const json::value* prompt = obj.if_contains("prompt");
    if (prompt && !prompt->is_null() && !prompt->is_string() && !prompt->is_array())
      return wrong_type("prompt", "a string or an array", *prompt);
    if (prompt) out.prompt_chars = text_size(*prompt);
  }

  return std::nullopt;
}

std::optional<error> stream_fields(api which, const json::object& obj, request_summary& out) {
  if (which == api::responses) {  // background responses (docs/queue.md)
    if (const json::value* b = obj.if_contains("background"); b && !b->is_null()) {
      if (!b->is_bool()) return wrong_type("background", "a boolean", *b);
      out.background = b->get_bool();
    }
    if (const json::value* st = obj.if_contains("store"); st && !st->is_null()) {
      if (!st->is_bool()) return wrong_type("store", "a boolean", *st);
      out.store = st->get_bool();
    }
  }
  if (const json::value* s = obj.if_contains("stream"); s && !s->is_null()) {
    if (!s->is_bool()) return wrong_type("stream", "a boolean", *s);
    out.stream = s->get_bool();
  }
  if (const json::value* so = obj.if_contains("stream_options"); so && !so->is_null()) {
    if (!so->is_object()) return wrong_type("stream_options", "an object", *so);
    if (const json::value* iu = so->get_object().if_contains("include_usage"); iu && !iu->is_null()) {
      if (!iu->is_bool()) return wrong_type("stream_options.include_usage", "a boolean", *iu);
      out.include_usage = iu->get_bool();
    }
  }
  return std::nullopt;
}

// Token limits and `n` (whole numbers), and the sampling knobs (numbers).
std::optional<error> sampling_fields(const json::object& obj, request_summary& out, std::uint64_t& choices) {
  for (const char* key : {"max_tokens", "max_completion_tokens", "n"}) {
    if (const json::value* v = obj.if_contains(key); v && !v->is_null()) {
      if (!is_uint(*v)) return wrong_type(key, "a non-negative integer", *v);
      if (std::string_view(key) != "n") out.max_tokens = as_uint(*v);
      else choices = std::max<std::uint64_t>(as_uint(*v), 1);
    }
  }
  for (const char* key : {"temperature", "top_p", "presence_penalty", "frequency_penalty"}) {
    if (const json::value* v = obj.if_contains(key); v && !v->is_null() && !v->is_number())
      return wrong_type(key, "a number", *v);
  }
  return std::nullopt;
}

}  // namespace

result<request_summary> validate_request(api which, std::string_view body) {
  unsigned char stack[8192];
  json::monotonic_resource mr(stack, sizeof stack);
  json::parse_options po;
  po.max_depth = 64;
  boost::system::error_code ec;
  json::value root = json::parse(body, ec, &mr, po);
  // Boost.JSON reads a number past a double's range as infinity, except one whose exponent itself
  // overflows, which is this parse error: neither goes upstream.
  if (ec == json::error::exponent_overflow)
    return bad("We could not parse the JSON body of your request: a number's exponent is too large (numbers must "
               "fit a 64-bit floating point value).",
               "");
  if (ec) return bad("We could not parse the JSON body of your request: " + ec.message() + ".", "");
  if (!root.is_object()) return bad("The request body must be a JSON object.", "");
  const auto& obj = root.get_object();
  request_summary out;
  // A member written twice: the parse kept one copy, an upstream may act on the other. Counting is
  // cheap; the search that names the member runs only when the counts differ.
  if (written_members(body) != parsed_members(root))
    if (auto dup = duplicate_member(body))
      return bad("Invalid request: the member '" + *dup + "' is given more than once in its object; send each member "
                 "once.",
                 *dup);
  // One walk over the parsed values; the path is built only for the number refused.
  if (std::vector<path_step> rev; non_finite_at(root, rev)) {
    std::string p = param_of(rev);
    return bad("Invalid value for '" + p + "': numbers must be finite; this one does not fit a 64-bit floating point "
               "value.",
               p);
  }

  // Moderations name a model only when the client picks one (the upstream has its default).
  const json::value* model = obj.if_contains("model");
  if (!model && which != api::moderations) return bad("You must provide a model parameter.", "model");
  if (model && !model->is_string()) return wrong_type("model", "a string", *model);
  if (model && model->get_string().empty()) return bad("The model parameter must not be empty.", "model");
  if (model) out.model = std::string(model->get_string());

  if (auto e = prompt_fields(which, obj, out)) return std::move(*e);
  if (auto e = stream_fields(which, obj, out)) return std::move(*e);
  std::uint64_t choices = 1;
  if (auto e = sampling_fields(obj, out, choices)) return std::move(*e);
  // Structured outputs: the requested schema, copied out of this parse (structured_output.cpp).
  auto wanted = extract_output_schema(which, obj);
  if (!wanted) return std::move(wanted).err();
  out.output_schema = std::move(*wanted);
  if (out.output_schema && which != api::responses) out.output_schema->choices = choices;
  auto tools = tool_schemas(which, obj);
  if (!tools) return std::move(tools).err();
  out.tool_schemas = std::move(*tools);
  return out;
}

}  // namespace sluice::proxy
