// Structured outputs, part 1 of 4: the schema policy, the `schema-*` config keys and the cache's
// metrics. The request side (schema extraction, contracts) is structured_output_contract.cpp, the
// whole-answer check and verdict forms structured_output_whole.cpp, streams structured_output_stream.cpp.
#include "proxy/structured/structured_output.hpp"

#include "config/option_table.hpp"
#include "observability/metrics.hpp"

namespace sluice::proxy {

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
      .add_duration("schema-cache-ttl", "how long a compiled schema is kept (0s: no expiry)", cache_ttl)
      .add("schema-max-depth",
           "response and tool schemas: most nesting levels, counted through $ref targets (over it: 400)", max_depth)
      .add("schema-max-properties", "response and tool schemas: most object property names, in total (over it: 400)",
           max_properties)
      .add("schema-max-enum-values", "response and tool schemas: most enum values, in total (over it: 400)",
           max_enum_values)
      .add("schema-max-total-chars",
           "response and tool schemas: most characters of property and definition names and enum/const strings, in "
           "total (over it: 400)",
           max_total_chars);
}

result<void> schema_options::validate() const {
  if (cache_entries == 0) return error::make(errc::bad_request, "schema-cache-entries must be at least 1");
  if (cache_bytes < 1024) return error::make(errc::bad_request, "schema-cache-bytes must be at least 1KiB");
  if (retries > 10) return error::make(errc::bad_request, "schema-retries must be at most 10");
  if (max_choices < 1 || max_choices > max_checked_choices)
    return error::make(errc::bad_request,
                       "schema-max-choices must be 1.." + std::to_string(max_checked_choices));
  if (cache_ttl < duration::zero()) return error::make(errc::bad_request, "schema-cache-ttl must not be negative");
  // Upper bounds, past which a larger value could only mislead: no instance is validated deeper
  // than validate_limits::max_depth, and no schema document holds more than max_json_values values.
  const schema::compile_limits fixed;
  const schema::validate_limits validation;
  if (max_depth < 1 || max_depth > validation.max_depth)
    return error::make(errc::bad_request, "schema-max-depth must be 1.." + std::to_string(validation.max_depth));
  if (max_properties < 1 || max_properties > fixed.max_json_values)
    return error::make(errc::bad_request, "schema-max-properties must be 1.." + std::to_string(fixed.max_json_values));
  if (max_enum_values < 1 || max_enum_values > fixed.max_json_values)
    return error::make(errc::bad_request, "schema-max-enum-values must be 1.." + std::to_string(fixed.max_json_values));
  if (max_total_chars < 1) return error::make(errc::bad_request, "schema-max-total-chars must be at least 1");
  return ok;
}

schema::compile_limits schema_options::compile_limits() const {
  schema::compile_limits l;
  l.max_depth = static_cast<std::size_t>(max_depth);
  l.max_properties = static_cast<std::size_t>(max_properties);
  l.max_enum_values = static_cast<std::size_t>(max_enum_values);
  l.max_total_chars = static_cast<std::size_t>(max_total_chars);
  return l;
}

schema::cache_options schema_options::cache_options() const {
  schema::cache_options o;
  o.max_entries = static_cast<std::size_t>(cache_entries);
  o.max_bytes = static_cast<std::size_t>(cache_bytes);
  o.ttl = cache_ttl;
  o.limits = compile_limits();
  return o;
}

result<void> register_schema_cache_metrics(obs::metrics_registry& registry, const schema::schema_cache& cache) {
  struct item {
    const char* name;
    const char* help;
    bool counter;
    double (*read)(const schema::cache_stats&);
  };
  static constexpr item items[] = {
      {"sluice_schema_cache_hits_total", "response and tool schemas served from the cache", true,
       [](const schema::cache_stats& s) { return static_cast<double>(s.hits); }},
      {"sluice_schema_cache_misses_total", "response and tool schemas compiled on a miss", true,
       [](const schema::cache_stats& s) { return static_cast<double>(s.misses); }},
      {"sluice_schema_cache_evictions_total", "compiled schemas evicted by the entry or byte bound", true,
       [](const schema::cache_stats& s) { return static_cast<double>(s.evictions); }},
      {"sluice_schema_cache_expirations_total", "compiled schemas expired by schema-cache-ttl", true,
       [](const schema::cache_stats& s) { return static_cast<double>(s.expirations); }},
      {"sluice_schema_cache_compile_errors_total", "response and tool schemas refused (400)", true,
       [](const schema::cache_stats& s) { return static_cast<double>(s.compile_errors); }},
      {"sluice_schema_cache_compile_seconds_total", "time spent compiling response and tool schemas", true,
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
