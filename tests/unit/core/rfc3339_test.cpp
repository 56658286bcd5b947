// RFC 3339 timestamps (Anthropic's rate-limit resets): what parses, to which instant, what does not,
// and that the writer's text reads back as the instant rounded up to the second.
#include <gtest/gtest.h>

#include "core/rfc3339.hpp"

using namespace std::chrono_literals;
using sluice::format_rfc3339;
using sluice::parse_rfc3339;

namespace {
std::chrono::sys_days ymd(int y, unsigned m, unsigned d) {
  return std::chrono::sys_days(std::chrono::year{y} / std::chrono::month{m} / std::chrono::day{d});
}
}  // namespace

TEST(Rfc3339, ParsesUtcFractionsAndOffsetsToTheSameInstant) {
  const auto base = ymd(2026, 12, 6) + 23h + 40min + 5s;
  EXPECT_EQ(parse_rfc3339("2026-12-06T23:40:05Z"), base);
  EXPECT_EQ(parse_rfc3339("2026-12-06t23:40:05z"), base);
  EXPECT_EQ(parse_rfc3339("2026-12-06 23:40:05Z"), base);
  EXPECT_EQ(parse_rfc3339("2026-12-07T00:40:05+01:00"), base);
  EXPECT_EQ(parse_rfc3339("2026-12-06T18:10:05-05:30"), base);
  EXPECT_EQ(parse_rfc3339("2026-12-06T23:40:05.25Z"), base + 250ms);
  EXPECT_EQ(parse_rfc3339("2026-12-06T23:40:05.000000001Z"), std::chrono::time_point_cast<std::chrono::system_clock::duration>(base + 1ns));
  EXPECT_EQ(parse_rfc3339("2024-02-29T00:00:00Z"), ymd(2024, 2, 29));
}

TEST(Rfc3339, RefusesWhatIsNotOne) {
  for (const char* bad : {"", "2026-12-06", "2026-12-06T23:40:05", "2026-12-06T23:40:05Zjunk", "2026-13-01T00:00:00Z",
                          "2026-02-30T00:00:00Z", "2025-02-29T00:00:00Z", "2026-12-06T24:00:00Z",
                          "2026-12-06T23:60:00Z", "2026-12-06T23:40:05.Z", "2026-12-06T23:40:05.1234567890Z",
                          "2026-12-06T23:40:05+1:00", "2026-12-06T23:40:05+24:00", "1969-12-31T23:59:59Z",
                          "20x6-12-06T23:40:05Z", "2026/12/06T23:40:05Z", "1.5"})
    EXPECT_FALSE(parse_rfc3339(bad)) << bad;
}

TEST(Rfc3339, WritesUtcRoundedUpToTheSecondAndReadsBack) {
  const auto t = ymd(2026, 1, 2) + 3h + 4min + 5s;
  EXPECT_EQ(format_rfc3339(t), "2026-01-02T03:04:05Z");
  EXPECT_EQ(format_rfc3339(t + 1ms), "2026-01-02T03:04:06Z");
  EXPECT_EQ(parse_rfc3339(format_rfc3339(t + 300ms)), t + 1s);
}
