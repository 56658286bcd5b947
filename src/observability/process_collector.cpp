#include "observability/process_collector.hpp"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <iterator>
#include <string>

namespace sluice::obs {
namespace {

bool next_field(std::string_view& rest, std::string_view& field) {
  const auto b = rest.find_first_not_of(' ');
  if (b == std::string_view::npos) return false;
  rest.remove_prefix(b);
  const auto e = rest.find(' ');
  field = rest.substr(0, e);
  rest.remove_prefix(e == std::string_view::npos ? rest.size() : e);
  return true;
}

bool to_u64(std::string_view s, std::uint64_t& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && p == s.data() + s.size() && !s.empty();
}

std::optional<std::string> read_file(const char* path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) return std::nullopt;
  return text;
}

// Counts /proc/self/fd entries, leaving out the descriptor this very listing holds open.
std::optional<std::uint64_t> count_open_fds() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return std::nullopt;
  const int own = ::dirfd(dir);
  std::uint64_t n = 0;
  while (const dirent* e = ::readdir(dir)) {
    std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    std::uint64_t fd = 0;
    if (to_u64(name, fd) && static_cast<int>(fd) == own) continue;
    ++n;
  }
  ::closedir(dir);
  return n;
}

prometheus::MetricFamily single(std::string_view name, std::string_view help, prometheus::MetricType type,
                                double value) {
  prometheus::MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = type;
  prometheus::ClientMetric m;
  if (type == prometheus::MetricType::Counter)
    m.counter.value = value;
  else
    m.gauge.value = value;
  f.metric.push_back(std::move(m));
  return f;
}

}  // namespace

std::optional<proc_stat> parse_proc_stat(std::string_view line) {
  const auto close = line.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(close + 1);
  // Field numbers as in proc(5): after ")" comes field 3 (state).
  proc_stat s;
  std::string_view f;
  for (int field = 3; field <= 24; ++field) {
    if (!next_field(rest, f)) return std::nullopt;
    bool good = true;
    switch (field) {
      case 14:
        good = to_u64(f, s.utime_ticks);
        break;
      case 15:
        good = to_u64(f, s.stime_ticks);
        break;
      case 22:
        good = to_u64(f, s.start_ticks);
        break;
      case 23:
        good = to_u64(f, s.vsize_bytes);
        break;
      case 24:
        good = to_u64(f, s.rss_pages);
        break;
      default:
        break;
    }
    if (!good) return std::nullopt;
  }
  return s;
}

std::optional<std::uint64_t> parse_boot_time(std::string_view text) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    if (line.starts_with("btime ")) {
      line.remove_prefix(6);
      std::uint64_t v = 0;
      if (to_u64(line.substr(0, line.find_first_of(" \r")), v)) return v;
      return std::nullopt;
    }
    pos = end + 1;
  }
  return std::nullopt;
}

std::vector<prometheus::MetricFamily> process_collector::Collect() const {
  using prometheus::MetricType;
  std::vector<prometheus::MetricFamily> out;

  const long ticks = ::sysconf(_SC_CLK_TCK);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (auto text = read_file("/proc/self/stat"); text && ticks > 0 && page > 0) {
    if (auto s = parse_proc_stat(*text)) {
      const double hz = static_cast<double>(ticks);
      out.push_back(single("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
                           MetricType::Counter, static_cast<double>(s->utime_ticks + s->stime_ticks) / hz));
      out.push_back(single("process_virtual_memory_bytes", "Virtual memory size in bytes.", MetricType::Gauge,
                           static_cast<double>(s->vsize_bytes)));
      out.push_back(single("process_resident_memory_bytes", "Resident memory size in bytes.", MetricType::Gauge,
                           static_cast<double>(s->rss_pages) * static_cast<double>(page)));
      if (auto boot = read_file("/proc/stat")) {
        if (auto btime = parse_boot_time(*boot)) {
          out.push_back(single("process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
                               MetricType::Gauge,
                               static_cast<double>(*btime) + static_cast<double>(s->start_ticks) / hz));
        }
      }
    }
  }
  if (auto n = count_open_fds()) {
    out.push_back(
        single("process_open_fds", "Number of open file descriptors.", MetricType::Gauge, static_cast<double>(*n)));
  }
  if (rlimit lim{}; ::getrlimit(RLIMIT_NOFILE, &lim) == 0) {
    // RLIM_INFINITY would print as 1.8e19; client_golang reports it the same way, so keep it.
    out.push_back(single("process_max_fds", "Maximum number of open file descriptors.", MetricType::Gauge,
                         static_cast<double>(lim.rlim_cur)));
  }
  return out;
}

}  // namespace sluice::obs
