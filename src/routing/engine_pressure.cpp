#include "routing/engine_pressure.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace sluice::routing {

namespace {

// One sample line: name, optional {labels}, value, optional timestamp.
bool parse_line(std::string_view line, std::string_view& name, double& value) {
  std::size_t i = 0;
  while (i < line.size() && line[i] != '{' && line[i] != ' ' && line[i] != '\t') ++i;
  name = line.substr(0, i);
  if (name.empty()) return false;
  if (i < line.size() && line[i] == '{') {
    // Skip the label set, honouring quoted values (which may hold '}' or escaped quotes).
    bool quoted = false;
    for (++i; i < line.size(); ++i) {
      char c = line[i];
      if (quoted) {
        if (c == '\\') ++i;
        else if (c == '"') quoted = false;
      } else if (c == '"') {
        quoted = true;
      } else if (c == '}') {
        break;
      }
    }
    if (i >= line.size()) return false;
    ++i;
  }
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  std::size_t start = i;
  while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
  std::string num(line.substr(start, i - start));
  if (num.empty()) return false;
  char* end = nullptr;
  value = std::strtod(num.c_str(), &end);
  return end == num.c_str() + num.size() && std::isfinite(value);
}

void add(std::optional<double>& slot, double v) { slot = slot.value_or(0) + v; }
void max_of(std::optional<double>& slot, double v) { slot = std::max(slot.value_or(v), v); }

}  // namespace

engine_sample parse_engine_metrics(std::string_view text) {
  engine_sample s;
  while (!text.empty()) {
    auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    std::string_view name;
    double v = 0;
    if (!parse_line(line, name, v)) continue;
    if (name == "vllm:num_requests_waiting") add(s.waiting, v);
    else if (name == "vllm:kv_cache_usage_perc" || name == "vllm:gpu_cache_usage_perc") max_of(s.kv_cache, v);
    else if (name == "llamacpp:kv_cache_usage_ratio") max_of(s.kv_cache, v);
    else if (name == "llamacpp:requests_deferred") add(s.deferred, v);
  }
  return s;
}

std::string saturation_reason(const engine_sample& s, const engine_limits& l) {
  if (s.kv_cache && *s.kv_cache >= l.max_kv_cache) return "kv_cache";
  if (s.waiting && *s.waiting > l.max_waiting) return "waiting";
  if (s.deferred && *s.deferred > l.max_deferred) return "deferred";
  return {};
}

}  // namespace sluice::routing
