// The standard process_* metrics (CPU, memory, file descriptors, start time), read from /proc/self
// at scrape time so nothing runs between scrapes. Collect() is thread-safe (it only reads files).
// On a system without /proc, or if a read fails, the affected metrics are left out of that scrape.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace sluice::obs {

// The fields of /proc/<pid>/stat the collector needs, in the kernel's units.
struct proc_stat {
  std::uint64_t utime_ticks = 0;
  std::uint64_t stime_ticks = 0;
  std::uint64_t start_ticks = 0;  // since boot
  std::uint64_t vsize_bytes = 0;
  std::uint64_t rss_pages = 0;
};

// Parses one /proc/<pid>/stat line. The command name (field 2) is in parentheses and may itself
// contain spaces and parentheses, so parsing resumes after the *last* ')'.
std::optional<proc_stat> parse_proc_stat(std::string_view line);

// The "btime" line of /proc/stat: boot time in seconds since the Unix epoch.
std::optional<std::uint64_t> parse_boot_time(std::string_view proc_stat_file);

class process_collector final : public prometheus::Collectable {
 public:
  // The names Collect() may yield, for name-collision checks.
  static constexpr std::array<std::string_view, 6> metric_names = {
      "process_cpu_seconds_total",     "process_open_fds",          "process_max_fds", "process_virtual_memory_bytes",
      "process_resident_memory_bytes", "process_start_time_seconds"};

  std::vector<prometheus::MetricFamily> Collect() const override;
};

}  // namespace sluice::obs
