#include "core/units.hpp"

#include <gtest/gtest.h>

using namespace sluice;
using namespace std::chrono_literals;

TEST(Units, ParsesDurations) {
  EXPECT_EQ(*parse_duration("500ms"), 500ms);
  EXPECT_EQ(*parse_duration("2s"), 2s);
  EXPECT_EQ(*parse_duration("5m"), 5min);
  EXPECT_EQ(*parse_duration("1h"), 1h);
  EXPECT_EQ(*parse_duration("1.5s"), 1500ms);
  EXPECT_EQ(*parse_duration("250us"), 250us);
  EXPECT_EQ(*parse_duration("0s"), 0s);
}

TEST(Units, RejectsBadDurations) {
  for (auto bad : {"", "5", "ms", "-1s", "1x", "1.2.3s", "s5", "1e3s"}) {
    auto r = parse_duration(bad);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_EQ(r.err().code, errc::bad_request);
    EXPECT_NE(r.err().message.find("duration"), std::string::npos);
  }
}

TEST(Units, ParsesSizes) {
  EXPECT_EQ(*parse_size("64KiB"), 64u * 1024);
  EXPECT_EQ(*parse_size("128MiB"), 128u * 1024 * 1024);
  EXPECT_EQ(*parse_size("4096"), 4096u);
  EXPECT_EQ(*parse_size("1GB"), 1000000000u);
  EXPECT_EQ(*parse_size("0.5KiB"), 512u);
}

TEST(Units, RejectsBadSizes) {
  for (auto bad : {"", "KiB", "12 parsecs", "-1MiB", "0.3B"}) EXPECT_FALSE(parse_size(bad).has_value()) << bad;
}

TEST(Units, FormatsRoundTrip) {
  EXPECT_EQ(format_size(64 * 1024), "64KiB");
  EXPECT_EQ(format_size(1000), "1000B");
  EXPECT_EQ(format_duration(250ms), "250ms");
  EXPECT_EQ(format_duration(30s), "30s");
  EXPECT_EQ(format_duration(5min), "5m");
  for (auto s : {"64KiB", "3MiB", "17B"}) EXPECT_EQ(format_size(*parse_size(s)), s);
  for (auto s : {"2s", "750ms", "5m", "1h"}) EXPECT_EQ(format_duration(*parse_duration(s)), s);
}
