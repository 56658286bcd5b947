#include "proxy/structured_output.hpp"

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "config/option_table.hpp"
#include "observability/metrics.hpp"
#include "sse/parser.hpp"

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

// The model's output text in a whole answer; nullopt when there is none.
std::optional<std::string> whole_output_text(api which, const json::value& body) {
  if (!body.is_object()) return std::nullopt;
  const auto& o = body.get_object();
  if (which == api::responses) {
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
          text->append(t->get_string().data(), t->get_string().size());  // as the SDKs' output_text joins them
        }
      }
    }
    return text;
  }
  const json::value* choices = o.if_contains("choices");
  if (!choices || !choices->is_array() || choices->get_array().empty()) return std::nullopt;
  const json::value& first = choices->get_array()[0];
  if (!first.is_object()) return std::nullopt;
  const json::value* message = first.get_object().if_contains("message");
  if (!message || !message->is_object()) return std::nullopt;
  const json::value* content = message->get_object().if_contains("content");
  if (!content || !content->is_string()) return std::nullopt;
  return std::string(content->get_string());
}

schema::validation_error no_output(std::string why) {
  schema::validation_error e;
  e.what = schema::validation_error::kind::malformed_json;
  e.message = std::move(why);
  return e;
}

}  // namespace

result<schema_policy> parse_schema_policy(std::string_view text) {
  if (text == "annotate") return schema_policy::annotate;
  if (text == "reject") return schema_policy::reject;
  if (text == "retry") return schema_policy::retry;
  return error::make(errc::bad_request, "expected one of annotate, reject, retry; got '" + std::string(text) + "'");
}

std::string_view to_string(schema_policy p) noexcept {
  switch (p) {
    case schema_policy::annotate: return "annotate";
    case schema_policy::reject: return "reject";
    case schema_policy::retry: return "retry";
  }
  return "annotate";
}

void schema_options::register_options(config::option_table& t) {
  t.add_custom({"schema-policy",
                "structured outputs: what to do with output that breaks its schema (annotate|reject|retry)",
                std::string(to_string(policy)),
                [this](std::string_view v) -> result<void> {
                  auto p = parse_schema_policy(v);
                  if (!p) return std::move(p).err();
                  policy = *p;
                  return ok;
                }});
  t.add("schema-retries", "structured outputs: extra upstream attempts under schema-policy retry (whole answers)",
        retries)
      .add("schema-cache-entries", "compiled response schemas kept (LRU)", cache_entries)
      .add_size("schema-cache-bytes", "estimated bytes of compiled response schemas kept (LRU)", cache_bytes)
      .add_duration("schema-cache-ttl", "how long a compiled schema is kept (0s: no expiry)", cache_ttl);
}

result<void> schema_options::validate() const {
  if (cache_entries == 0) return error::make(errc::bad_request, "schema-cache-entries must be at least 1");
  if (cache_bytes < 1024) return error::make(errc::bad_request, "schema-cache-bytes must be at least 1KiB");
  if (retries > 10) return error::make(errc::bad_request, "schema-retries must be at most 10");
  if (cache_ttl < duration::zero()) return error::make(errc::bad_request, "schema-cache-ttl must not be negative");
  return ok;
}

schema::cache_options schema_options::cache_options() const {
  schema::cache_options o;
  o.max_entries = static_cast<std::size_t>(cache_entries);
  o.max_bytes = static_cast<std::size_t>(cache_bytes);
  o.ttl = cache_ttl;
  return o;
}

result<std::optional<output_schema_request>> extract_output_schema(api which, const json::object& body) {
  if (which == api::chat_completions) {
    const json::value* rf = body.if_contains("response_format");
    if (!rf) return std::optional<output_schema_request>{};
    return read_format(*rf, "response_format", "response_format.json_schema");
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
  return std::optional<output_contract>(std::move(c));
}

schema::verdict check_whole(const output_contract& c, std::string_view body) {
  unsigned char stack[4096];
  json::monotonic_resource mr(stack, sizeof stack);
  boost::system::error_code ec;
  json::value v = json::parse(body, ec, &mr);
  if (ec) return no_output("the upstream answer is not JSON");
  auto text = whole_output_text(c.which, v);
  if (!text) return no_output("the upstream answer has no output text");
  return c.schema->validate_text(*text);
}

std::string verdict_header_value(const schema::verdict& v) {
  if (!v) return "valid";
  std::string raw = "invalid; path=" + v->instance_path + "; " + v->message;
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

std::string verdict_json(const schema::verdict& v) {
  json::object o;
  o["valid"] = !v.has_value();
  if (v) {
    o["instance_path"] = v->instance_path;
    o["schema_path"] = v->schema_path;
    o["message"] = v->message;
  }
  return json::serialize(o);
}

error violation_error(const schema::validation_error& v) {
  error e = schema::to_error(v);
  e.code = errc::upstream_protocol;
  e.api_code = "schema_violation";
  std::string where = v.instance_path.empty() ? std::string("the document root") : "'" + v.instance_path + "'";
  e.message = "The model's output does not match the response schema at " + where + ": " + v.message;
  e.param = v.instance_path;
  return e;
}

stream_check::stream_check(const output_contract& c)
    : validator_(c.schema), which_(c.which), policy_(c.policy), emit_event_(c.stream_event) {}

std::optional<error> stream_check::judge(const result<void>& r) {
  if (r) return std::nullopt;
  if (const auto* v = validator_.violation()) verdict_ = *v;
  else verdict_ = no_output(r.err().message);
  if (policy_ == schema_policy::annotate) return std::nullopt;
  return violation_error(*verdict_);
}

std::optional<error> stream_check::feed(std::string_view delta) {
  if (finished_ || verdict_ || delta.empty()) return std::nullopt;
  return judge(validator_.feed(delta));
}

std::optional<error> stream_check::finish() {
  if (finished_) return std::nullopt;
  finished_ = true;
  if (verdict_) return std::nullopt;  // already judged (and, under reject, already sent)
  return judge(validator_.finish());
}

std::optional<error> stream_check::on_event(const json::object& event) {
  if (which_ == api::responses) {
    const json::value* type = event.if_contains("type");
    if (!type || !type->is_string()) return std::nullopt;
    const json::string& t = type->get_string();
    if (t == "response.output_text.delta") {
      const json::value* d = event.if_contains("delta");
      if (d && d->is_string()) return feed(d->get_string());
      return std::nullopt;
    }
    if (t == "response.output_text.done" || t == "response.completed" || t == "response.incomplete") return finish();
    return std::nullopt;
  }
  const json::value* choices = event.if_contains("choices");
  if (!choices || !choices->is_array() || choices->get_array().empty()) return std::nullopt;
  const json::value& first = choices->get_array()[0];
  if (!first.is_object()) return std::nullopt;
  const auto& choice = first.get_object();
  if (const json::value* idx = choice.if_contains("index"); idx && idx->is_int64() && idx->get_int64() != 0)
    return std::nullopt;  // n > 1: only the first choice is checked
  if (const json::value* delta = choice.if_contains("delta"); delta && delta->is_object()) {
    if (const json::value* content = delta->get_object().if_contains("content"); content && content->is_string())
      if (auto e = feed(content->get_string())) return e;
  }
  if (const json::value* fin = choice.if_contains("finish_reason"); fin && fin->is_string()) return finish();
  return std::nullopt;
}

std::optional<error> stream_check::on_done() { return finish(); }

std::string stream_check::final_event() {
  if (!emit_event_ || policy_ != schema_policy::annotate) return {};
  (void)finish();  // annotate never turns a verdict into an error
  return sse::format_event(verdict_json(verdict_), schema_event_type);
}

result<void> register_schema_cache_metrics(obs::metrics_registry& registry, const schema::schema_cache& cache) {
  struct item {
    const char* name;
    const char* help;
    bool counter;
    double (*read)(const schema::cache_stats&);
  };
  static constexpr item items[] = {
      {"sluice_schema_cache_hits_total", "response schemas served from the cache", true,
       [](const schema::cache_stats& s) { return static_cast<double>(s.hits); }},
      {"sluice_schema_cache_misses_total", "response schemas compiled on a miss", true,
       [](const schema::cache_stats& s) { return static_cast<double>(s.misses); }},
      {"sluice_schema_cache_evictions_total", "compiled schemas evicted by the entry or byte bound", true,
       [](const schema::cache_stats& s) { return static_cast<double>(s.evictions); }},
      {"sluice_schema_cache_expirations_total", "compiled schemas expired by schema-cache-ttl", true,
       [](const schema::cache_stats& s) { return static_cast<double>(s.expirations); }},
      {"sluice_schema_cache_compile_errors_total", "response schemas refused (400)", true,
       [](const schema::cache_stats& s) { return static_cast<double>(s.compile_errors); }},
      {"sluice_schema_cache_compile_seconds_total", "time spent compiling response schemas", true,
       [](const schema::cache_stats& s) { return s.compile_seconds_total; }},
      {"sluice_schema_cache_entries", "compiled schemas in the cache", false,
       [](const schema::cache_stats& s) { return static_cast<double>(s.entries); }},
      {"sluice_schema_cache_bytes", "estimated bytes of the compiled schemas in the cache", false,
       [](const schema::cache_stats& s) { return static_cast<double>(s.bytes); }},
  };
  for (const auto& it : items) {
    auto fn = [&cache, read = it.read] { return read(cache.snapshot()); };
    auto r = it.counter ? registry.add_callback_counter(it.name, it.help, fn)
                        : registry.add_callback_gauge(it.name, it.help, fn);
    if (!r) return r;
  }
  return ok;
}

}  // namespace sluice::proxy
