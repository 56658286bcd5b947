// The report in two shapes: a short human summary and a JSON object for scripts.
#include <cstdio>

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include "loadgen/loadgen.hpp"

namespace sluice::loadgen {
namespace {

std::string fmt(const char* format, auto... args) {
  char buf[256];
  const int n = std::snprintf(buf, sizeof buf, format, args...);
  return std::string(buf, n < 0 ? 0 : std::min<std::size_t>(static_cast<std::size_t>(n), sizeof buf - 1));
}

unsigned long long ull(std::uint64_t v) { return static_cast<unsigned long long>(v); }

// "23.4 MiB": readable at a glance; the JSON report carries the exact byte counts.
std::string human_bytes(std::uint64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt("%llu B", ull(n)) : fmt("%.1f %s", v, units[u]);
}

std::string line(const char* name, const percentiles& p) {
  return fmt("  %-18s p50 %.3f  p90 %.3f  p99 %.3f  max %.3f  (n=%llu)\n", name, p.p50_ms, p.p90_ms, p.p99_ms,
             p.max_ms, ull(p.count));
}

boost::json::object to_json(const percentiles& p) {
  return {{"p50_ms", p.p50_ms}, {"p90_ms", p.p90_ms}, {"p99_ms", p.p99_ms}, {"max_ms", p.max_ms}, {"count", p.count}};
}

}  // namespace

double rss_per_stream(const report& r) {
  if (r.peak_rss_bytes == 0 || r.peak_open_streams == 0 || r.peak_rss_bytes < r.baseline_rss_bytes) return 0;
  return static_cast<double>(r.peak_rss_bytes - r.baseline_rss_bytes) / static_cast<double>(r.peak_open_streams);
}

bool all_ok(const report& r) { return r.failed == 0 && r.requests > 0; }

std::string format_text(const report& r) {
  std::string out;
  out += fmt("flood: %llu requests in %.2fs: %llu ok, %llu abandoned as intended, %llu failed\n", ull(r.requests),
             r.wall_seconds, ull(r.ok), ull(r.abandoned_ok), ull(r.failed));
  if (r.failed > 0)
    out += fmt("  %-18s connect %llu  status %llu  truncated %llu  malformed %llu  error_event %llu  timeout %llu\n",
               "failed by kind", ull(r.connect_errors), ull(r.status_errors), ull(r.truncated), ull(r.malformed),
               ull(r.error_events), ull(r.timeouts));
  out += fmt("  %-18s", "status");
  if (r.status_counts.empty()) out += " none";
  for (const auto& [code, n] : r.status_counts) out += fmt(" %d: %llu", code, ull(n));
  out += "\n";
  if (r.retry_after_seen > 0) out += fmt("  %-18s %llu\n", "retry-after seen", ull(r.retry_after_seen));
  out += line("ttft ms", r.ttft);
  out += line("gap ms", r.gap);
  out += line("e2e ms", r.e2e);
  out += fmt("  %-18s %llu (%.1f/s), %s received\n", "chunks", ull(r.chunks), r.chunks_per_second,
             human_bytes(r.bytes).c_str());
  out += fmt("  %-18s %llu\n", "peak open streams", ull(r.peak_open_streams));
  if (r.peak_rss_bytes > 0)
    out += fmt("  %-18s baseline %s, peak %s, %.0f bytes per open stream\n", "target rss",
               human_bytes(r.baseline_rss_bytes).c_str(), human_bytes(r.peak_rss_bytes).c_str(), rss_per_stream(r));
  for (const auto& why : r.failure_samples) out += "  failure: " + why + "\n";
  return out;
}

std::string format_json(const report& r) {
  boost::json::object status;
  for (const auto& [code, n] : r.status_counts) status[std::to_string(code)] = n;
  boost::json::array samples;
  for (const auto& why : r.failure_samples) samples.emplace_back(why);
  boost::json::object o{
      {"requests", r.requests},
      {"ok", r.ok},
      {"abandoned_ok", r.abandoned_ok},
      {"failed", r.failed},
      {"failed_by_kind",
       {{"connect", r.connect_errors},
        {"status", r.status_errors},
        {"truncated", r.truncated},
        {"malformed", r.malformed},
        {"error_event", r.error_events},
        {"timeout", r.timeouts}}},
      {"status_counts", std::move(status)},
      {"retry_after_seen", r.retry_after_seen},
      {"ttft", to_json(r.ttft)},
      {"gap", to_json(r.gap)},
      {"e2e", to_json(r.e2e)},
      {"chunks", r.chunks},
      {"chunks_per_second", r.chunks_per_second},
      {"bytes", r.bytes},
      {"peak_open_streams", r.peak_open_streams},
      {"wall_seconds", r.wall_seconds},
      {"baseline_rss_bytes", r.baseline_rss_bytes},
      {"peak_rss_bytes", r.peak_rss_bytes},
      {"rss_per_stream", rss_per_stream(r)},
      {"failure_samples", std::move(samples)},
  };
  return boost::json::serialize(o) + "\n";
}

}  // namespace sluice::loadgen
