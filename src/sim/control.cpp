#include "sim/control.hpp"

#include <boost/json.hpp>

#include <array>
#include <charconv>

namespace sluice::sim {
namespace {

namespace json = boost::json;

enum class field_kind { text, count, time };

// A script field, the x-sim-* header it stands for, and where each side keeps it.
struct field_spec {
  std::string_view name, header;
  field_kind kind;
  std::string script_entry::*entry;
  std::string_view header_overrides::*target;
};

constexpr std::array<field_spec, 11> fields{{
    {"fault", "x-sim-fault", field_kind::text, &script_entry::fault, &header_overrides::fault},
    {"fault_after", "x-sim-fault-after", field_kind::count, &script_entry::fault_after, &header_overrides::fault_after},
    {"status", "x-sim-status", field_kind::count, &script_entry::status, &header_overrides::status},
    {"header_delay", "x-sim-header-delay", field_kind::time, &script_entry::header_delay, &header_overrides::header_delay},
    {"ttft", "x-sim-ttft", field_kind::time, &script_entry::ttft, &header_overrides::ttft},
    {"token_delay", "x-sim-token-delay", field_kind::time, &script_entry::token_delay, &header_overrides::token_delay},
    {"tokens", "x-sim-tokens", field_kind::count, &script_entry::tokens, &header_overrides::tokens},
    {"token_size", "x-sim-token-size", field_kind::count, &script_entry::token_size, &header_overrides::token_size},
    {"retry_after", "x-sim-retry-after", field_kind::time, &script_entry::retry_after, &header_overrides::retry_after},
    {"content", "x-sim-content", field_kind::text, &script_entry::content, &header_overrides::content},
    {"tool_call", "x-sim-tool-call", field_kind::text, &script_entry::tool_call, &header_overrides::tool_call},
}};

error bad(const std::string& param, std::string_view msg) {
  return error::make(errc::bad_request, param + ": " + std::string(msg), param);
}

// A JSON number that is a whole number >= 0.
std::optional<std::uint64_t> whole_number(const json::value& v) {
  if (v.is_uint64()) return v.get_uint64();
  if (v.is_int64() && v.get_int64() >= 0) return static_cast<std::uint64_t>(v.get_int64());
  return std::nullopt;
}

std::optional<double> number(const json::value& v) {
  if (v.is_double()) return v.get_double();
  if (v.is_uint64()) return static_cast<double>(v.get_uint64());
  if (v.is_int64()) return static_cast<double>(v.get_int64());
  return std::nullopt;
}

result<script_entry> parse_entry(const json::value& v, std::size_t index, const options& opts) {
  const std::string where = "script[" + std::to_string(index) + "]";
  if (!v.is_object()) return bad(where, "expected an object");
  script_entry e;
  for (const auto& [key, value] : v.get_object()) {
    const field_spec* f = nullptr;
    for (const auto& spec : fields)
      if (spec.name == key) f = &spec;
    const std::string param = where + "." + std::string(key);
    if (!f) return bad(param, "unknown field");
    std::string& out = e.*(f->entry);
    if (f->entry == &script_entry::content && value.is_array()) {  // one text per choice
      const auto& texts = value.get_array();
      if (texts.empty() || texts.size() > max_choices)
        return bad(param, "expected 1.." + std::to_string(max_choices) + " strings, one per choice");
      for (std::size_t i = 0; i < texts.size(); ++i) {
        if (!texts[i].is_string() || texts[i].get_string().empty())
          return bad(param + "[" + std::to_string(i) + "]", "expected a non-empty string");
        e.choice_contents.emplace_back(texts[i].get_string());
      }
      out = e.choice_contents.front();
    } else if (value.is_string()) {
      out = std::string(value.get_string());
      if (out.empty()) return bad(param, "must not be empty");
    } else if (auto n = whole_number(value); n && f->kind == field_kind::count) {
      out = std::to_string(*n);
    } else {
      return bad(param, f->kind == field_kind::count  ? "expected a whole number"
                        : f->kind == field_kind::time ? "expected a duration with its unit, like \"2s\""
                        : f->entry == &script_entry::content ? "expected a string or an array of strings"
                                                             : "expected a string");
    }
  }
  // Checked exactly as the headers it stands for would be, so a request never meets a bad entry.
  header_overrides h;
  e.apply(h);
  if (auto s = resolve_settings(opts, h); !s) {
    const std::string& msg = s.err().message;
    const auto colon = msg.find(':');
    const std::string_view header = std::string_view(msg).substr(0, colon);
    for (const auto& spec : fields)
      if (spec.header == header && colon != std::string::npos)
        return bad(where + "." + std::string(spec.name), std::string_view(msg).substr(colon + 2));
    return bad(where, msg);
  }
  return e;
}

void append_double(std::string& out, double v) {
  char buf[32];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, ec == std::errc{} ? static_cast<std::size_t>(p - buf) : 0);
}

}  // namespace

void script_entry::apply(header_overrides& h) const {
  for (const auto& f : fields) {
    const std::string& v = this->*(f.entry);
    if (v.empty()) continue;
    h.*(f.target) = v;
  }
  if (!content.empty()) h.content_b64 = {};  // the entry's text wins over the request's own
  if (!choice_contents.empty()) h.choice_contents = &choice_contents;
}

result<control_update> parse_control(std::string_view body, const options& opts) {
  boost::system::error_code ec;
  json::value doc = json::parse(body, ec);
  if (ec) return error::make(errc::bad_request, "control body is not valid JSON: " + ec.message());
  if (!doc.is_object()) return error::make(errc::bad_request, "control body must be a JSON object");
  control_update u;
  for (const auto& [key, value] : doc.get_object()) {
    if (key == "clear") {
      if (!value.is_bool()) return bad("clear", "expected true or false");
      u.clear = value.get_bool();
    } else if (key == "engine") {
      if (!value.is_object()) return bad("engine", "expected an object");
      for (const auto& [name, v] : value.get_object()) {
        const std::string param = "engine." + std::string(name);
        if (name == "waiting" || name == "deferred") {
          auto n = whole_number(v);
          if (!n) return bad(param, "expected a whole number");
          (name == "waiting" ? u.waiting : u.deferred) = *n;
        } else if (name == "kv_cache_usage") {
          auto x = number(v);
          if (!x || !(*x >= 0 && *x <= 1)) return bad(param, "expected a number in 0..1");
          u.kv_cache_usage = *x;
        } else if (name == "paused") {
          if (!v.is_bool()) return bad(param, "expected true or false");
          u.paused = v.get_bool();
        } else {
          return bad(param, "unknown field");
        }
      }
    } else if (key == "script") {
      if (!value.is_array()) return bad("script", "expected an array of entries");
      const auto& a = value.get_array();
      if (a.size() > max_script_entries)
        return bad("script", "at most " + std::to_string(max_script_entries) + " entries");
      u.script.reserve(a.size());
      for (std::size_t i = 0; i < a.size(); ++i) {
        auto e = parse_entry(a[i], i, opts);
        if (!e) return std::move(e).err();
        u.script.push_back(std::move(*e));
      }
    } else {
      return bad(std::string(key), "unknown field");
    }
  }
  return u;
}

result<void> control_state::apply(control_update u) {
  std::lock_guard lock(mu_);
  const std::size_t kept = u.clear ? 0 : script_.size();
  if (kept + u.script.size() > max_script_entries)
    return bad("script", "the script would hold " + std::to_string(kept + u.script.size()) + " entries; at most " +
                             std::to_string(max_script_entries));
  if (u.clear) {
    script_.clear();
    engine_ = engine_values{};
  }
  if (u.waiting) engine_.waiting = *u.waiting;
  if (u.deferred) engine_.deferred = *u.deferred;
  if (u.kv_cache_usage) engine_.kv_cache_usage = *u.kv_cache_usage;
  if (u.paused) engine_.paused = *u.paused;
  paused_.store(engine_.paused, std::memory_order_release);
  for (auto& e : u.script) script_.push_back(std::move(e));
  size_.store(script_.size(), std::memory_order_release);
  return ok;
}

std::optional<script_entry> control_state::pop() {
  if (size_.load(std::memory_order_acquire) == 0) return std::nullopt;  // the common case: no lock
  std::lock_guard lock(mu_);
  if (script_.empty()) return std::nullopt;
  std::optional<script_entry> e(std::move(script_.front()));
  script_.pop_front();
  size_.store(script_.size(), std::memory_order_release);
  return e;
}

engine_values control_state::engine() const {
  std::lock_guard lock(mu_);
  return engine_;
}

std::string control_state::to_json() const {
  std::size_t remaining;
  engine_values e;
  {
    std::lock_guard lock(mu_);
    remaining = script_.size();
    e = engine_;
  }
  std::string out = "{\"script_remaining\":" + std::to_string(remaining) +
                    ",\"engine\":{\"waiting\":" + std::to_string(e.waiting) + ",\"kv_cache_usage\":";
  append_double(out, e.kv_cache_usage);
  out += ",\"deferred\":" + std::to_string(e.deferred) + ",\"paused\":" + (e.paused ? "true" : "false") + "}}";
  return out;
}

}  // namespace sluice::sim
