#include "observability/process_collector.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <vector>

namespace sluice::obs {
namespace {

// A real /proc/<pid>/stat line with a hostile command name: spaces and a ") " inside.
constexpr std::string_view stat_line =
    "4242 (evil) name (x) S 1 4242 4242 0 -1 4194560 1030 0 0 0 "
    "250 75 0 0 20 0 9 0 123456 987654321 2048 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 17 3 0 0 0 0 0\n";

TEST(parse_proc_stat, reads_fields_after_the_last_paren) {
  const auto s = parse_proc_stat(stat_line);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->utime_ticks, 250u);
  EXPECT_EQ(s->stime_ticks, 75u);
  EXPECT_EQ(s->start_ticks, 123456u);
  EXPECT_EQ(s->vsize_bytes, 987654321u);
  EXPECT_EQ(s->rss_pages, 2048u);
}

TEST(parse_proc_stat, rejects_truncated_or_garbled_lines) {
  EXPECT_FALSE(parse_proc_stat(""));
  EXPECT_FALSE(parse_proc_stat("4242 no-parens S 1 2 3"));
  EXPECT_FALSE(parse_proc_stat("4242 (x) S 1 4242 4242 0 -1 4194560 1030 0 0 0 250"));
  EXPECT_FALSE(parse_proc_stat("4242 (x) S 1 4242 4242 0 -1 4194560 1030 0 0 0 2x0 75 0 0 20 0 9 0 1 2 3"));
}

TEST(parse_boot_time, finds_the_btime_line) {
  EXPECT_EQ(parse_boot_time("cpu  1 2 3\nintr 5\nbtime 1700000000\nprocesses 9\n"), 1700000000u);
  EXPECT_FALSE(parse_boot_time("cpu 1 2 3\n"));
  EXPECT_FALSE(parse_boot_time("btime soon\n"));
}

std::map<std::string, double> collect_values() {
  std::map<std::string, double> v;
  for (const auto& f : process_collector{}.Collect()) {
    EXPECT_EQ(f.metric.size(), 1u) << f.name;
    EXPECT_FALSE(f.help.empty()) << f.name;
    const auto& m = f.metric.at(0);
    v[f.name] = f.type == prometheus::MetricType::Counter ? m.counter.value : m.gauge.value;
  }
  return v;
}

TEST(process_collector, reports_plausible_values_for_this_process) {
  const auto v = collect_values();
  for (auto name : process_collector::metric_names) ASSERT_TRUE(v.contains(std::string(name))) << name;
  EXPECT_GE(v.at("process_cpu_seconds_total"), 0.0);
  EXPECT_LT(v.at("process_cpu_seconds_total"), 3600.0);
  EXPECT_GT(v.at("process_resident_memory_bytes"), 1024.0 * 1024);  // a gtest binary is more than 1 MiB
  EXPECT_LT(v.at("process_resident_memory_bytes"), 64.0 * 1024 * 1024 * 1024);
  EXPECT_GE(v.at("process_virtual_memory_bytes"), v.at("process_resident_memory_bytes"));
  EXPECT_GE(v.at("process_open_fds"), 3.0);  // stdin, stdout, stderr
  EXPECT_GE(v.at("process_max_fds"), v.at("process_open_fds"));
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_LE(v.at("process_start_time_seconds"), now + 1.0);
  EXPECT_GT(v.at("process_start_time_seconds"), now - 6 * 3600.0);  // this test process started recently
}

TEST(process_collector, counts_exactly_the_descriptors_opened) {
  const double before = collect_values().at("process_open_fds");
  std::vector<int> fds;
  for (int i = 0; i < 5; ++i) fds.push_back(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  for (int fd : fds) ASSERT_GE(fd, 0);
  const double during = collect_values().at("process_open_fds");
  for (int fd : fds) ::close(fd);
  EXPECT_EQ(during - before, 5.0);
  EXPECT_EQ(collect_values().at("process_open_fds"), before);
}

TEST(process_collector, cpu_time_grows_with_work) {
  const double before = collect_values().at("process_cpu_seconds_total");
  // Burn CPU until the kernel's tick-granular counter moves (no sleeping: sleeping costs no CPU).
  volatile std::uint64_t sink = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  double after = before;
  while (after <= before && std::chrono::steady_clock::now() < deadline) {
    for (int i = 0; i < 1000000; ++i) sink = sink + static_cast<std::uint64_t>(i);
    after = collect_values().at("process_cpu_seconds_total");
  }
  EXPECT_GT(after, before);
}

}  // namespace
}  // namespace sluice::obs
