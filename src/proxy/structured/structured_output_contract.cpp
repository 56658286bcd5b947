// Structured outputs, part 2 of 4: what a request asks for — the json_schema format read out of the
// body (copied out of the caller's short-lived parse) — and the contract built from it, with the
// schema from the process-wide cache; and the check of function tools' parameter schemas.
#include "proxy/structured/structured_output.hpp"

namespace sluice::proxy {
namespace json = boost::json;

namespace {

error bad(std::string msg, std::string param) { return error::make(errc::bad_request, std::move(msg), std::move(param)); }

error not_a(const std::string& param, std::string_view what) {
  return bad("Invalid type for '" + param + "': expected " + std::string(what) + ".", param);
}

// The json_schema format object (chat: response_format.json_schema; responses: text.format itself).
result<std::optional<output_schema_request>> read_json_schema(const json::object& fmt, const std::string& where) {
  output_schema_request out;
  const json::value* name = fmt.if_contains("name");
  if (!name) return bad("Missing required parameter: '" + where + ".name'.", where + ".name");
  if (!name->is_string()) return not_a(where + ".name", "a string");
  out.name = std::string(name->get_string());
  if (const json::value* strict = fmt.if_contains("strict"); strict && !strict->is_null()) {
    if (!strict->is_bool()) return not_a(where + ".strict", "a boolean");
    out.strict = strict->get_bool();
  }
  const json::value* schema = fmt.if_contains("schema");
  if (!schema || schema->is_null()) return std::optional<output_schema_request>{};  // nothing to check
  if (!schema->is_object() && !schema->is_bool()) return not_a(where + ".schema", "an object");
  out.schema = json::value(*schema, json::storage_ptr());  // out of the caller's short-lived parse
  out.param = where + ".schema";
  return std::optional<output_schema_request>(std::move(out));
}

// `type` of a format object: json_schema -> read it; text / json_object -> nothing to check.
result<std::optional<output_schema_request>> read_format(const json::value& fmt, const std::string& where,
                                                         const std::string& schema_where) {
  if (fmt.is_null()) return std::optional<output_schema_request>{};
  if (!fmt.is_object()) return not_a(where, "an object");
  const json::value* type = fmt.get_object().if_contains("type");
  if (!type) return bad("Missing required parameter: '" + where + ".type'.", where + ".type");
  if (!type->is_string()) return not_a(where + ".type", "a string");
  std::string_view t = type->get_string();
  if (t == "text" || t == "json_object") return std::optional<output_schema_request>{};
  if (t != "json_schema")
    return bad("Invalid value for '" + where + ".type': expected one of 'text', 'json_object', 'json_schema'.",
               where + ".type");
  if (schema_where == where) return read_json_schema(fmt.get_object(), where);
  const json::value* js = fmt.get_object().if_contains("json_schema");
  if (!js) return bad("Missing required parameter: '" + schema_where + "'.", schema_where);
  if (!js->is_object()) return not_a(schema_where, "an object");
  return read_json_schema(js->get_object(), schema_where);
}

}  // namespace

result<std::optional<output_schema_request>> extract_output_schema(api which, const json::object& body) {
  if (which == api::chat_completions || which == api::completions) {
    const json::value* rf = body.if_contains("response_format");
    if (!rf) return std::optional<output_schema_request>{};
    auto wanted = read_format(*rf, "response_format", "response_format.json_schema");
    if (which == api::completions && wanted && *wanted) {
      // echo puts the prompt in front of the completion: the text could never be the document.
      if (const json::value* echo = body.if_contains("echo"); echo && echo->is_bool() && echo->get_bool())
        return bad("'echo' cannot be combined with a json_schema 'response_format': the returned text would "
                   "start with the prompt and could never match the schema.",
                   "echo");
    }
    return wanted;
  }
  if (which == api::responses) {
    const json::value* text = body.if_contains("text");
    if (!text || text->is_null()) return std::optional<output_schema_request>{};
    if (!text->is_object()) return not_a("text", "an object");
    const json::value* fmt = text->get_object().if_contains("format");
    if (!fmt) return std::optional<output_schema_request>{};
    return read_format(*fmt, "text.format", "text.format");
  }
  return std::optional<output_schema_request>{};
}

result<std::optional<output_contract>> make_output_contract(api which, std::optional<output_schema_request> wanted,
                                                            contract_headers headers, const schema_options& opts,
                                                            schema::schema_cache& cache) {
  schema_policy policy = opts.policy;
  if (!headers.policy.empty()) {
    auto p = parse_schema_policy(headers.policy);
    if (!p)
      return bad("Invalid value for header '" + std::string(schema_policy_header) + "': " + p.err().message + ".",
                 std::string(schema_policy_header));
    policy = *p;
  }
  if (!wanted) return std::optional<output_contract>{};
  if (wanted->choices > opts.max_choices)
    return bad("Invalid value for 'n': at most " + std::to_string(opts.max_choices) +
                   " choices can be checked against a response schema (schema-max-choices); got " +
                   std::to_string(wanted->choices) + ".",
               "n");
  auto compiled = cache.get_or_compile(wanted->schema);
  if (!compiled) {
    error e = std::move(compiled).err();
    e.code = errc::bad_request;
    e.message = "Invalid schema for response format '" + wanted->name + "': " + e.message;
    e.param = wanted->param + e.param;  // the compile error's JSON pointer, under the schema's place
    return e;
  }
  output_contract c;
  c.which = which;
  c.policy = policy;
  c.schema = std::move(*compiled);
  c.retries = policy == schema_policy::retry ? opts.retries : 0;
  c.stream_event = headers.events == "1" || headers.events == "true";
  c.choices = static_cast<std::uint32_t>(wanted->choices);
  c.max_choices = static_cast<std::uint32_t>(opts.max_choices);
  return std::optional<output_contract>(std::move(c));
}

result<void> check_tool_schemas(const std::vector<tool_schema_request>& tools, schema::schema_cache& cache) {
  for (const auto& t : tools) {
    auto compiled = cache.get_or_compile(t.schema, schema::compile_purpose::check_only);
    if (compiled) continue;
    error e = std::move(compiled).err();
    e.code = errc::bad_request;
    e.message = "Invalid schema for function '" + t.name + "': " + e.message;
    e.param = t.param + e.param;  // the compile error's JSON pointer, under the schema's place
    return e;
  }
  return ok;
}

}  // namespace sluice::proxy
