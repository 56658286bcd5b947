#include "proxy/structured_output.hpp"

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "config/option_table.hpp"
#include "observability/metrics.hpp"
#include "sse/parser.hpp"

#include <algorithm>
#include <cstdint>

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
      .add("schema-max-choices",
           "structured outputs: most choices (n) checked per request; a request with more is refused (400)",
           max_choices)
      .add("schema-cache-entries", "compiled response schemas kept (LRU)", cache_entries)
      .add_size("schema-cache-bytes", "estimated bytes of compiled response schemas kept (LRU)", cache_bytes)
      .add_duration("schema-cache-ttl", "how long a compiled schema is kept (0s: no expiry)", cache_ttl);
}

result<void> schema_options::validate() const {
  if (cache_entries == 0) return error::make(errc::bad_request, "schema-cache-entries must be at least 1");
  if (cache_bytes < 1024) return error::make(errc::bad_request, "schema-cache-bytes must be at least 1KiB");
  if (retries > 10) return error::make(errc::bad_request, "schema-retries must be at most 10");
  if (max_choices < 1 || max_choices > max_checked_choices)
    return error::make(errc::bad_request,
                       "schema-max-choices must be 1.." + std::to_string(max_checked_choices));
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
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const std::uint32_t index = choice_index(arr[i], i);
    const json::string* text = choice_text(c.which, arr[i]);
    out.error = text ? c.schema->validate_text(std::string_view(text->data(), text->size()))
                     : no_output("the upstream answer has no output text");
    if (out.error) {
      if (c.choices > 1 || arr.size() > 1 || index != 0) out.choice = index;
      return out;
    }
  }
  return out;
}

std::string verdict_header_value(const output_verdict& v) { return verdict_header_value(v.error, v.choice); }

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

stream_check::stream_check(const output_contract& c)
    : schema_(c.schema),
      which_(c.which),
      policy_(c.policy),
      emit_event_(c.stream_event),
      expected_(c.choices),
      max_choices_(c.max_choices) {}

std::optional<error> stream_check::refuse(std::uint32_t index, schema::validation_error why) {
  verdict_.error = std::move(why);
  if (expected_ > 1 || index != 0) verdict_.choice = index;
  if (policy_ == schema_policy::annotate) return std::nullopt;
  return violation_error(*verdict_.error, verdict_.choice);
}

std::optional<error> stream_check::out_of_bounds(std::int64_t index) {
  if (finished_ || verdict_) return std::nullopt;
  schema::validation_error e;
  e.what = schema::validation_error::kind::limit_exceeded;
  e.message = "the stream carries choice index " + std::to_string(index) + "; only indices 0.." +
              std::to_string(max_choices_ - 1) + " are checked (schema-max-choices)";
  const auto shown = static_cast<std::uint32_t>(std::clamp<std::int64_t>(index, 0, UINT32_MAX));
  return refuse(shown, std::move(e));
}

stream_check::choice_state& stream_check::slot(std::uint32_t index) {
  if (choices_.size() <= index) choices_.resize(index + 1);
  choice_state& st = choices_[index];
  if (!st.validator) {
    st.validator.emplace(schema_);
    ++tracked_;
  }
  return st;
}

std::optional<error> stream_check::judge(std::uint32_t index, const result<void>& r) {
  if (r) return std::nullopt;
  const auto* v = choices_[index].validator->violation();
  return refuse(index, v ? *v : no_output(r.err().message));
}

std::optional<error> stream_check::feed(std::uint32_t index, std::string_view delta) {
  if (finished_ || verdict_ || delta.empty()) return std::nullopt;
  return judge(index, slot(index).validator->feed(delta));
}

std::optional<error> stream_check::finish_choice(std::uint32_t index) {
  if (finished_ || verdict_) return std::nullopt;
  choice_state& st = slot(index);
  if (st.finished) return std::nullopt;
  st.finished = true;
  if (index < expected_) ++expected_finished_;
  return judge(index, st.validator->finish());
}

std::optional<error> stream_check::finish() {
  if (finished_) return std::nullopt;
  std::optional<error> out;
  if (!verdict_) {  // else already judged (and, under reject, already sent)
    if (tracked_ == 0) (void)slot(0);  // nothing arrived: choice 0's empty document is the verdict
    for (std::uint32_t i = 0; i < choices_.size() && !verdict_; ++i)
      if (choices_[i].validator && !choices_[i].finished) out = finish_choice(i);
  }
  finished_ = true;
  return out;
}

std::optional<error> stream_check::on_event(const json::object& event) {
  if (which_ == api::responses) {
    const json::value* type = event.if_contains("type");
    if (!type || !type->is_string()) return std::nullopt;
    const json::string& t = type->get_string();
    if (t == "response.output_text.delta") {
      const json::value* d = event.if_contains("delta");
      if (d && d->is_string()) return feed(0, d->get_string());
      return std::nullopt;
    }
    if (t == "response.output_text.done" || t == "response.completed" || t == "response.incomplete") return finish();
    return std::nullopt;
  }
  const json::value* choices = event.if_contains("choices");
  if (!choices || !choices->is_array()) return std::nullopt;
  const auto& arr = choices->get_array();
  for (std::size_t pos = 0; pos < arr.size(); ++pos) {
    if (!arr[pos].is_object()) continue;
    const auto& choice = arr[pos].get_object();
    std::int64_t index = static_cast<std::int64_t>(pos);
    if (const json::value* idx = choice.if_contains("index"); idx && idx->is_int64()) index = idx->get_int64();
    else if (idx && idx->is_uint64()) index = INT64_MAX;  // out of any bound
    if (index < 0 || index >= static_cast<std::int64_t>(max_choices_)) return out_of_bounds(index);
    const auto i = static_cast<std::uint32_t>(index);
    const json::value* text = nullptr;
    if (which_ == api::completions) {
      text = choice.if_contains("text");
    } else if (const json::value* delta = choice.if_contains("delta"); delta && delta->is_object()) {
      text = delta->get_object().if_contains("content");
    }
    if (text && text->is_string())
      if (auto e = feed(i, text->get_string())) return e;
    if (const json::value* fin = choice.if_contains("finish_reason"); fin && fin->is_string())
      if (auto e = finish_choice(i)) return e;
  }
  return std::nullopt;
}

std::optional<error> stream_check::on_done() { return finish(); }

std::string stream_check::final_event() {
  if (!emit_event_ || policy_ != schema_policy::annotate) return {};
  (void)finish();  // annotate never turns a verdict into an error
  return sse::format_event(verdict_json(verdict_.error, verdict_.choice), schema_event_type);
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
