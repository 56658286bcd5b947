// memory_budget, cgroup detection, stream_registry victim selection, the pressure tick and loop,
// and the admission options.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>

#include <filesystem>
#include <fstream>
#include <random>

#include <boost/asio/bind_cancellation_slot.hpp>

#include "admission/stream_registry.hpp"
#include "test_support.hpp"

using namespace sluice;
using namespace sluice::admission;
using namespace sluice::admission::testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t GiB = std::uint64_t{1} << 30;

// A throwaway cgroup root with the files a test writes into it.
struct temp_cgroup {
  fs::path root;
  temp_cgroup() {
    std::random_device rd;
    root = fs::temp_directory_path() / ("sluice-cgroup-" + std::to_string(rd()) + std::to_string(rd()));
    fs::create_directories(root);
  }
  ~temp_cgroup() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  void write(const std::string& rel, const std::string& text) const {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << text;
  }
};

}  // namespace

TEST(CgroupLimit, ParsesNumbersAndUnlimitedForms) {
  EXPECT_EQ(parse_cgroup_limit("max\n"), std::nullopt);
  EXPECT_EQ(parse_cgroup_limit("1073741824\n"), GiB);
  EXPECT_EQ(parse_cgroup_limit("536870912"), GiB / 2);
  EXPECT_EQ(parse_cgroup_limit("9223372036854771712\n"), std::nullopt);  // v1 "unlimited"
  EXPECT_EQ(parse_cgroup_limit("99999999999999999999999"), std::nullopt);  // beyond uint64
  EXPECT_EQ(parse_cgroup_limit(""), std::nullopt);
  EXPECT_EQ(parse_cgroup_limit("12abc"), std::nullopt);
  EXPECT_EQ(parse_cgroup_limit("0\n"), std::nullopt);
}

TEST(DetectBudget, ConfiguredWins) {
  temp_cgroup cg;
  cg.write("memory.max", "1073741824\n");
  auto d = detect_budget(512, cg.root.string(), 16 * GiB);
  EXPECT_EQ(d.bytes, 512u);
  EXPECT_EQ(d.source, budget_source::configured);
}

TEST(DetectBudget, CgroupV2Number) {
  temp_cgroup cg;
  cg.write("memory.max", "2147483648\n");
  auto d = detect_budget(0, cg.root.string(), 16 * GiB);
  EXPECT_EQ(d.bytes, 2 * GiB);
  EXPECT_EQ(d.source, budget_source::cgroup_v2);
}

TEST(DetectBudget, CgroupV2MaxFallsBackToPhysical) {
  temp_cgroup cg;
  cg.write("memory.max", "max\n");
  cg.write("memory/memory.limit_in_bytes", "1073741824\n");  // ignored: v2 answered
  auto d = detect_budget(0, cg.root.string(), 16 * GiB);
  EXPECT_EQ(d.bytes, 16 * GiB);
  EXPECT_EQ(d.source, budget_source::physical);
}

TEST(DetectBudget, CgroupV1NumberAndHugeValue) {
  temp_cgroup cg;
  cg.write("memory/memory.limit_in_bytes", "1073741824\n");
  auto d = detect_budget(0, cg.root.string(), 16 * GiB);
  EXPECT_EQ(d.bytes, GiB);
  EXPECT_EQ(d.source, budget_source::cgroup_v1);

  cg.write("memory/memory.limit_in_bytes", "9223372036854771712\n");
  d = detect_budget(0, cg.root.string(), 16 * GiB);
  EXPECT_EQ(d.bytes, 16 * GiB);
  EXPECT_EQ(d.source, budget_source::physical);
}

TEST(DetectBudget, CgroupAbovePhysicalAndMissingFiles) {
  temp_cgroup cg;
  cg.write("memory.max", std::to_string(64 * GiB) + "\n");
  EXPECT_EQ(detect_budget(0, cg.root.string(), 16 * GiB).source, budget_source::physical);
  temp_cgroup empty;
  auto d = detect_budget(0, empty.root.string(), 16 * GiB);
  EXPECT_EQ(d.bytes, 16 * GiB);
  EXPECT_EQ(d.source, budget_source::physical);
  EXPECT_GT(physical_memory_bytes(), 0u);
}

TEST(MemoryBudget, ReservationsFitOrNot) {
  memory_budget b(1000, 0.9, 0.8, [] { return std::size_t{0}; });
  auto r1 = b.try_reserve(600);
  ASSERT_TRUE(r1);
  EXPECT_EQ(r1->bytes(), 600u);
  EXPECT_FALSE(b.try_reserve(401));
  auto r2 = b.try_reserve(400);
  ASSERT_TRUE(r2);
  EXPECT_EQ(b.reserved(), 1000u);
  EXPECT_TRUE(b.saturated());
  EXPECT_FALSE(b.try_reserve(1));
  EXPECT_FALSE(b.try_reserve(std::numeric_limits<std::uint64_t>::max()));
  r1.reset();
  EXPECT_EQ(b.reserved(), 400u);
  EXPECT_FALSE(b.saturated());
  auto moved = std::move(*r2);
  EXPECT_FALSE(*r2);
  EXPECT_EQ(b.reserved(), 400u);
  memory_budget::reservation assigned;
  assigned = std::move(moved);
  EXPECT_EQ(b.reserved(), 400u);
  assigned.reset();
  EXPECT_EQ(b.reserved(), 0u);
  auto zero = b.try_reserve(0);
  EXPECT_TRUE(zero);
}

TEST(MemoryBudget, FakedRssDrivesShedReadyAndSaturation) {
  fake_rss rss;
  memory_budget b(1000, 0.9, 0.8, rss.fn());
  EXPECT_EQ(b.sample(), 0u);
  EXPECT_TRUE(b.ready());
  EXPECT_FALSE(b.over_shed_threshold());

  rss.set(800);
  b.sample();
  EXPECT_TRUE(b.ready());  // at the threshold is still ready
  rss.set(801);
  b.sample();
  EXPECT_FALSE(b.ready());
  EXPECT_FALSE(b.over_shed_threshold());
  rss.set(901);
  b.sample();
  EXPECT_TRUE(b.over_shed_threshold());
  EXPECT_FALSE(b.saturated());
  rss.set(1000);
  b.sample();
  EXPECT_TRUE(b.saturated());

  // And back down: readiness returns only below the ready threshold.
  rss.set(850);
  b.sample();
  EXPECT_FALSE(b.saturated());
  EXPECT_FALSE(b.over_shed_threshold());
  EXPECT_FALSE(b.ready());
  rss.set(700);
  b.sample();
  EXPECT_TRUE(b.ready());
}

TEST(StreamRegistry, VictimsAreTheLargestBuffersFirst) {
  stream_registry reg;
  std::vector<stream_handle> hs;
  for (std::uint64_t bytes : {100, 5000, 20, 7000, 3000}) {
    hs.push_back(reg.add());
    hs.back().set_buffered(bytes);
  }
  EXPECT_EQ(reg.size(), 5u);
  EXPECT_EQ(reg.buffered_total(), 15120u);
  auto v = reg.select_victims(3);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].buffered, 7000u);
  EXPECT_EQ(v[0].id, hs[3].id());
  EXPECT_EQ(v[1].buffered, 5000u);
  EXPECT_EQ(v[2].buffered, 3000u);
  EXPECT_EQ(reg.select_victims(99).size(), 5u);
  for (auto& h : hs) EXPECT_FALSE(h.reset_requested());  // selecting alone changes nothing
}

TEST(StreamRegistry, ResetRequestsFlagAndCallbackAndSkipsTheAlreadyReset) {
  stream_registry reg;
  std::vector<int> called(4, 0);
  std::vector<stream_handle> hs;
  for (int i = 0; i < 4; ++i) {
    hs.push_back(reg.add([&called, i] { ++called[static_cast<std::size_t>(i)]; }));
    hs.back().set_buffered(static_cast<std::uint64_t>(10 * (i + 1)));
  }
  auto first = reg.reset_victims(2);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].id, hs[3].id());
  EXPECT_EQ(first[1].id, hs[2].id());
  EXPECT_TRUE(hs[3].reset_requested());
  EXPECT_TRUE(hs[2].reset_requested());
  EXPECT_FALSE(hs[1].reset_requested());
  EXPECT_EQ(called, (std::vector<int>{0, 0, 1, 1}));
  // The next tick moves on instead of asking the same streams again.
  auto second = reg.reset_victims(2);
  ASSERT_EQ(second.size(), 2u);
  EXPECT_EQ(second[0].id, hs[1].id());
  EXPECT_EQ(called, (std::vector<int>{1, 1, 1, 1}));
}

TEST(StreamRegistry, HandlesUnregisterOnDestructionAndMove) {
  stream_registry reg;
  auto a = reg.add();
  {
    auto b = reg.add();
    EXPECT_EQ(reg.size(), 2u);
  }
  EXPECT_EQ(reg.size(), 1u);
  stream_handle moved = std::move(a);
  EXPECT_FALSE(a);
  EXPECT_EQ(reg.size(), 1u);
  moved.set_buffered(42);
  EXPECT_EQ(reg.buffered_total(), 42u);
  moved = reg.add();  // the old registration goes
  EXPECT_EQ(reg.size(), 1u);
  EXPECT_EQ(reg.buffered_total(), 0u);
  moved.reset();
  EXPECT_EQ(reg.size(), 0u);
}

TEST(PressureTick, ResetsAtMostNPerTickOnlyWhenSaturated) {
  fake_rss rss;
  memory_budget b(1000, 0.9, 0.8, rss.fn());
  stream_registry reg;
  std::vector<stream_handle> hs;
  for (std::uint64_t i = 0; i < 20; ++i) {
    hs.push_back(reg.add());
    hs.back().set_buffered(i * 10);
  }
  rss.set(950);  // shedding, not saturated: nobody is reset
  auto r = pressure_tick(b, reg, 8);
  EXPECT_TRUE(r.shedding);
  EXPECT_FALSE(r.saturated);
  EXPECT_FALSE(r.ready);
  EXPECT_TRUE(r.reset.empty());

  rss.set(1200);
  r = pressure_tick(b, reg, 8);
  EXPECT_TRUE(r.saturated);
  ASSERT_EQ(r.reset.size(), 8u);
  EXPECT_EQ(r.reset.front().buffered, 190u);
  EXPECT_EQ(r.reset.back().buffered, 120u);
  // The relays of the reset streams end them; the next tick takes the next largest.
  for (std::size_t i = 12; i < 20; ++i) hs[i].reset();
  r = pressure_tick(b, reg, 8);
  ASSERT_EQ(r.reset.size(), 8u);
  EXPECT_EQ(r.reset.front().buffered, 110u);

  rss.set(100);
  r = pressure_tick(b, reg, 8);
  EXPECT_TRUE(r.reset.empty());
  EXPECT_TRUE(r.ready);
}

TEST(PressureLoop, TicksUntilCancelled) {
  fake_rss rss;
  memory_budget b(1000, 0.9, 0.8, rss.fn());
  stream_registry reg;
  auto h = reg.add();
  h.set_buffered(10);
  rss.set(2000);
  net::io_context ctx;
  net::cancellation_signal stop;
  int ticks = 0;
  std::size_t resets = 0;
  bool finished = false;
  net::co_spawn(ctx,
                pressure_loop(b, reg, 4, 1ms,
                              [&](const pressure_report& r) {
                                ++ticks;
                                resets += r.reset.size();
                              }),
                net::bind_cancellation_slot(stop.slot(), [&](std::exception_ptr e) {
                  finished = true;
                  if (e) std::rethrow_exception(e);
                }));
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (ticks < 3 && std::chrono::steady_clock::now() < deadline) ctx.run_one_for(100ms);
  EXPECT_GE(ticks, 3);
  EXPECT_EQ(resets, 1u);  // the one stream, once
  EXPECT_TRUE(h.reset_requested());
  stop.emit(net::cancellation_type::terminal);
  while (!finished && std::chrono::steady_clock::now() < deadline) ctx.run_one_for(100ms);
  EXPECT_TRUE(finished);
}

// Cancellation that lands while a tick runs (as when it comes after the timer has fired but
// before the loop resumed): the loop still ends quietly, with no exception and no further tick.
TEST(PressureLoop, CancellationDuringATickEndsTheLoopQuietly) {
  fake_rss rss;
  memory_budget b(1000, 0.9, 0.8, rss.fn());
  stream_registry reg;
  net::io_context ctx;
  net::cancellation_signal stop;
  int ticks = 0;
  bool finished = false;
  std::exception_ptr failure;
  net::co_spawn(ctx,
                pressure_loop(b, reg, 4, 1ms,
                              [&](const pressure_report&) {
                                if (++ticks == 2) stop.emit(net::cancellation_type::terminal);
                              }),
                net::bind_cancellation_slot(stop.slot(), [&](std::exception_ptr e) {
                  finished = true;
                  failure = e;
                }));
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!finished && std::chrono::steady_clock::now() < deadline) ctx.run_one_for(100ms);
  EXPECT_TRUE(finished);
  EXPECT_FALSE(failure) << "the loop ended with an exception";
  EXPECT_EQ(ticks, 2);
}

TEST(AdmissionOptions, RegisteredNamesParseFromYamlAndFlags) {
  options o;
  config::option_table t;
  o.register_options(t);
  CLI::App app;
  t.register_cli(app);
  ASSERT_TRUE(t.apply_yaml_text("max-streams: 32\nqueue-timeout: 2s\nmemory-limit: 1GiB\nkeys-file: /k\n").has_value());
  std::vector<std::string> args{"--queue-depth", "7", "--shed-threshold", "0.95", "--ready-threshold", "0.5",
                                "--max-resets-per-tick", "3"};
  std::reverse(args.begin(), args.end());
  app.parse(args);
  ASSERT_TRUE(t.apply_cli().has_value());
  EXPECT_EQ(o.max_streams, 32u);
  EXPECT_EQ(o.queue_depth, 7u);
  EXPECT_EQ(o.queue_timeout, 2s);
  EXPECT_EQ(o.memory_limit, GiB);
  EXPECT_DOUBLE_EQ(o.shed_threshold, 0.95);
  EXPECT_DOUBLE_EQ(o.ready_threshold, 0.5);
  EXPECT_EQ(o.max_resets_per_tick, 3u);
  EXPECT_EQ(o.keys_file, "/k");
  EXPECT_TRUE(o.validate().has_value());
}

TEST(AdmissionOptions, ValidateRejectsInconsistentThresholds) {
  options o;
  EXPECT_TRUE(o.validate().has_value());
  o.ready_threshold = 0.95;  // above shed
  EXPECT_FALSE(o.validate().has_value());
  o = options{};
  o.shed_threshold = 1.5;
  EXPECT_FALSE(o.validate().has_value());
  o = options{};
  o.max_streams = 0;
  EXPECT_FALSE(o.validate().has_value());
}

TEST(AdmissionOptions, QueuePerKeyParsesAndAGivenOneMustFitTheQueue) {
  options o;
  EXPECT_EQ(o.queue_per_key, 256u);
  o.queue_depth = 10;
  EXPECT_TRUE(o.validate().has_value()) << "the default is cut to a smaller queue-depth, not an error";

  options y;
  config::option_table t;
  y.register_options(t);
  ASSERT_TRUE(t.apply_yaml_text("queue-depth: 100\nqueue-per-key: 25\n").has_value());
  EXPECT_EQ(y.queue_per_key, 25u);
  EXPECT_TRUE(y.validate().has_value());
  ASSERT_TRUE(t.apply_yaml_text("queue-per-key: 0\n").has_value());  // 0 = no per-key cap
  EXPECT_TRUE(y.validate().has_value());
  ASSERT_TRUE(t.apply_yaml_text("queue-per-key: 101\n").has_value());
  auto bad = y.validate();
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.err().message.find("queue-per-key"), std::string::npos);
  EXPECT_FALSE(t.apply_yaml_text("queue-per-key: lots\n").has_value());

  options f;
  config::option_table ft;
  f.register_options(ft);
  CLI::App app;
  ft.register_cli(app);
  std::vector<std::string> args{"--queue-depth", "2", "--queue-per-key", "3"};
  std::reverse(args.begin(), args.end());
  app.parse(args);
  ASSERT_TRUE(ft.apply_cli().has_value());
  EXPECT_EQ(f.queue_per_key, 3u);
  EXPECT_FALSE(f.validate().has_value()) << "a flag above queue-depth is an error";
}
