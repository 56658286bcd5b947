#include "observability/exposition.hpp"

#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>

namespace sluice::obs {

namespace {

bool name_char(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' || (!first && c >= '0' && c <= '9');
}

// The length of a metric name at the start of `s` (0: none).
std::size_t name_length(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && name_char(s[i], i == 0)) ++i;
  return i;
}

// The length of a label block "{a="x",b="y\"z"}" at the start of `s`, or 0 when it is malformed.
std::size_t labels_length(std::string_view s) {
  if (s.empty() || s[0] != '{') return 0;
  std::size_t i = 1;
  for (;;) {
    while (i < s.size() && s[i] == ' ') ++i;
    if (i < s.size() && s[i] == '}') return i + 1;
    const std::size_t n = name_length(s.substr(i));
    if (n == 0) return 0;
    i += n;
    if (i >= s.size() || s[i] != '=') return 0;
    if (++i >= s.size() || s[i] != '"') return 0;
    ++i;
    for (;;) {
      if (i >= s.size()) return 0;
      if (s[i] == '\\') {
        if (i + 1 >= s.size()) return 0;
        i += 2;
        continue;
      }
      if (s[i] == '"') break;
      ++i;
    }
    ++i;
    if (i < s.size() && s[i] == ',') ++i;
    else if (i >= s.size() || s[i] != '}') return 0;
  }
}

bool parse_value(std::string_view t, double& v) {
  if (t == "+Inf" || t == "Inf") return v = std::numeric_limits<double>::infinity(), true;
  if (t == "-Inf") return v = -std::numeric_limits<double>::infinity(), true;
  if (t == "NaN") return v = std::numeric_limits<double>::quiet_NaN(), true;
  if (t.empty()) return false;
  if (t[0] == '+') t.remove_prefix(1);
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  return ec == std::errc() && end == t.data() + t.size();
}

void write_value(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
  } else if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
  } else {
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, ec == std::errc() ? end : buf);
  }
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

error bad_line(std::size_t line, std::string_view why) {
  return error::make(errc::bad_request, "exposition line " + std::to_string(line) + ": " + std::string(why));
}

// The next line of `text` (without its line feed or a carriage return before it); `text` moves past it.
std::string_view next_line(std::string_view& text) {
  const auto nl = text.find('\n');
  std::string_view line = text.substr(0, nl);
  text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

// The value after a sample's series (and the timestamp after it, checked and dropped).
std::optional<error> sample_value(std::string_view value, std::size_t line_no, double& v) {
  if (const auto sp = value.find(' '); sp != std::string_view::npos) {  // a timestamp: whole milliseconds
    std::string_view ts = value.substr(sp + 1);
    value = value.substr(0, sp);
    if (!ts.empty() && ts[0] == '-') ts.remove_prefix(1);
    if (ts.empty() || ts.find_first_not_of("0123456789") != std::string_view::npos)
      return bad_line(line_no, "a timestamp that is not whole milliseconds");
  }
  if (!parse_value(value, v)) return bad_line(line_no, "a value that is not a number");
  return std::nullopt;
}

// parse_exposition()'s state: the families so far, by name, and the one the samples that follow
// belong to (the last HELP/TYPE line's).
class exposition_reader {
 public:
  std::optional<error> read_line(std::string_view line, std::size_t line_no) {
    if (line.empty()) return std::nullopt;
    if (line[0] == '#') return read_comment(line, line_no);
    return read_sample(line, line_no);
  }
  exposition take() { return std::move(out_); }

 private:
  exposition_family& family_of(std::string_view name) {
    auto [it, fresh] = by_name_.try_emplace(std::string(name), out_.size());
    if (fresh) out_.push_back(exposition_family{std::string(name), {}, {}, {}});
    return out_[it->second];
  }

  std::optional<error> read_comment(std::string_view line, std::size_t line_no) {
    const bool help = starts_with(line, "# HELP "), type = starts_with(line, "# TYPE ");
    if (!help && !type) return std::nullopt;  // a comment
    std::string_view rest = line.substr(7);
    const std::size_t n = name_length(rest);
    if (n == 0 || (rest.size() > n && rest[n] != ' '))
      return bad_line(line_no, "a HELP or TYPE line without a metric name");
    auto& f = family_of(rest.substr(0, n));
    current_ = by_name_[f.name];
    std::string_view value = rest.size() > n ? rest.substr(n + 1) : std::string_view();
    if (help) {
      f.help = std::string(value);
      return std::nullopt;
    }
    if (value != "counter" && value != "gauge" && value != "histogram" && value != "summary" && value != "untyped")
      return bad_line(line_no, "unknown metric type");
    if (!f.type.empty() && f.type != value) return bad_line(line_no, "a second TYPE for one metric");
    f.type = std::string(value);
    return std::nullopt;
  }

  std::optional<error> read_sample(std::string_view line, std::size_t line_no) {
    const std::size_t n = name_length(line);
    if (n == 0) return bad_line(line_no, "a sample without a metric name");
    std::size_t end = n;
    if (end < line.size() && line[end] == '{') {
      const std::size_t l = labels_length(line.substr(end));
      if (l == 0) return bad_line(line_no, "malformed labels");
      end += l;
    }
    if (end >= line.size() || line[end] != ' ') return bad_line(line_no, "a sample without a value");
    double v = 0;
    if (auto bad = sample_value(line.substr(end + 1), line_no, v)) return bad;
    family_of_sample(line.substr(0, n)).samples.emplace_back(std::string(line.substr(0, end)), v);
    return std::nullopt;
  }

  // A sample belongs to the family announced last when its name is that family's or one of its
  // suffixed series (histogram and summary parts); otherwise it is a family of its own.
  exposition_family& family_of_sample(std::string_view name) {
    if (current_ < out_.size() && starts_with(name, out_[current_].name)) {
      const std::string_view suffix = name.substr(out_[current_].name.size());
      if (suffix.empty() || suffix == "_bucket" || suffix == "_sum" || suffix == "_count" || suffix == "_total" ||
          suffix == "_created")
        return out_[current_];
    }
    auto& f = family_of(name);
    current_ = by_name_[f.name];
    return f;
  }

  exposition out_;
  std::unordered_map<std::string, std::size_t> by_name_;
  std::size_t current_ = static_cast<std::size_t>(-1);
};

}  // namespace

result<exposition> parse_exposition(std::string_view text) {
  exposition_reader reader;
  std::size_t line_no = 0;
  while (!text.empty()) {
    ++line_no;
    if (auto bad = reader.read_line(next_line(text), line_no)) return std::move(*bad);
  }
  return reader.take();
}

std::string write_exposition(const exposition& e) {
  std::string out;
  for (const auto& f : e) {
    if (!f.help.empty()) out += "# HELP " + f.name + " " + f.help + "\n";
    if (!f.type.empty()) out += "# TYPE " + f.name + " " + f.type + "\n";
    for (const auto& [series, v] : f.samples) {
      out += series;
      out += ' ';
      write_value(out, v);
      out += '\n';
    }
  }
  return out;
}

namespace {

using enum merge_rule;

// Grouped by what the figure is; the why of each group is the rule (exposition.hpp).
constexpr gauge_rule gauge_table[] = {
    // Each process's own share: the pod's figure is the sum.
    {"sluice_streams_active", sum},
    {"sluice_stream_active_buffers", sum},
    {"sluice_stream_buffered_bytes", sum},
    {"sluice_connections_active", sum},
    {"sluice_admin_connections_active", sum},
    {"sluice_queue_depth", sum},  // each process's own admission queue (the pod's: sluice_pod_queued_requests)
    {"sluice_queue_lanes", sum},
    {"sluice_upstream_outstanding_requests", sum},
    {"sluice_schema_cache_entries", sum},
    {"sluice_schema_cache_bytes", sum},
    {"sluice_jobs_running", sum},
    {"sluice_jobs_waiting", sum},       // each process's in-process queue
    {"sluice_jobs_worker_slots", sum},  // worker-max-jobs per process: the pod runs the sum at once
    {"sluice_responses_stored", sum},
    {"sluice_response_store_bytes", sum},
    {"sluice_response_followers", sum},
    {"sluice_redis_connected", sum},
    {"sluice_redis_in_flight", sum},
    {"sluice_redis_leases_held", sum},  // each process keeps its own leases
    {"process_open_fds", sum},
    {"process_virtual_memory_bytes", sum},
    {"process_resident_memory_bytes", sum},
    // The same figure in every process: a configured limit, the pod's segment, a fleet-wide reading.
    {"sluice_max_streams", max},
    {"sluice_memory_budget_bytes", max},
    {"sluice_memory_used_bytes", max},  // the pod's memory reading under --processes
    {"sluice_upstream_circuit_state", max},  // one circuit for the pod
    {"sluice_queue_jobs_waiting", max},  // the fleet's queue in Redis, read by every process
    {"sluice_queue_redis_bytes", max},  // the fleet's ledger in Redis, read by every process
    {"sluice_queue_redis_bytes_limit", max},  // redis-response-bytes, the same in every process
    {"sluice_worker_processes", max},
    {"sluice_worker_processes_configured", max},
    {"sluice_config_generation", max},
    {"sluice_pod_streams_in_use", max},
    {"sluice_pod_queued_requests", max},
    {"sluice_pod_resident_memory_bytes", max},
    {"sluice_pod_shared_rows", max},
    {"sluice_pod_shared_rows_capacity", max},
    {"process_max_fds", max},
    // A 0/1 state: 1 when it holds in any process.
    {"sluice_shared_limits_degraded", max},
    {"sluice_upstream_engine_saturated", max},
    // A worst case.
    {"sluice_upstream_healthy", min},
    {"sluice_upstream_ratelimit_remaining", min},
    {"process_start_time_seconds", min},
};

}  // namespace

std::span<const gauge_rule> gauge_rules() noexcept { return gauge_table; }

std::optional<merge_rule> listed_gauge_rule(std::string_view family) noexcept {
  for (const auto& g : gauge_table)
    if (g.family == family) return g.rule;
  return std::nullopt;
}

merge_rule rule_of(std::string_view family, std::string_view type) noexcept {
  if (type == "gauge") return listed_gauge_rule(family).value_or(merge_rule::sum);
  if (starts_with(family, "sluice_pod_") || starts_with(family, "sluice_worker_") || starts_with(family, "sluice_config_"))
    return merge_rule::max;  // the pod's shared segment: the same in every worker
  return merge_rule::sum;
}

exposition merge_expositions(const std::vector<exposition>& parts) {
  exposition out;
  std::unordered_map<std::string, std::size_t> families;
  std::vector<std::unordered_map<std::string, std::size_t>> series;  // per family of `out`
  for (const auto& part : parts) {
    for (const auto& f : part) {
      auto [fit, fresh] = families.try_emplace(f.name, out.size());
      if (fresh) {
        out.push_back(exposition_family{f.name, f.help, f.type, {}});
        series.emplace_back();
      }
      auto& into = out[fit->second];
      if (into.help.empty()) into.help = f.help;
      if (into.type.empty()) into.type = f.type;
      const merge_rule rule = into.type == f.type ? rule_of(into.name, into.type) : merge_rule::sum;
      auto& index = series[fit->second];
      for (const auto& [key, v] : f.samples) {
        auto [sit, new_series] = index.try_emplace(key, into.samples.size());
        if (new_series) {
          into.samples.emplace_back(key, v);
          continue;
        }
        double& have = into.samples[sit->second].second;
        switch (rule) {
          case merge_rule::sum: have += v; break;
          case merge_rule::max: have = std::max(have, v); break;
          case merge_rule::min: have = std::min(have, v); break;
        }
      }
    }
  }
  return out;
}

void fold_ended(exposition& into, const exposition& ended) {
  exposition kept;
  for (const auto& f : ended) {
    if (f.type == "gauge" || rule_of(f.name, f.type) != merge_rule::sum) continue;
    kept.push_back(f);
  }
  into = merge_expositions({into, kept});
}

}  // namespace sluice::obs
