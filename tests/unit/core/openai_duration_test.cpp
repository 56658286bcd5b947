// The OpenAI duration codec: the strings OpenAI sends and sluice writes, what is refused, and the
// round trip (format then parse gives the duration rounded up to the millisecond).
#include "core/openai_duration.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

using namespace sluice;
using namespace std::chrono_literals;

namespace {

duration ceil_to_ms(duration d) {
  return d <= 0ns ? 0ns : duration(std::chrono::ceil<std::chrono::milliseconds>(d));
}

}  // namespace

// Moved from unit/routing (it was routing::parse_reset); the assertions are unchanged.
TEST(ParseOpenAiDuration, OpenAIFormats) {
  EXPECT_EQ(parse_openai_duration("1s"), duration(1s));
  EXPECT_EQ(parse_openai_duration("20ms"), duration(20ms));
  EXPECT_EQ(parse_openai_duration("6m0s"), duration(6min));
  EXPECT_EQ(parse_openai_duration("1m30.5s"), duration(90500ms));
  EXPECT_EQ(parse_openai_duration("2h0m0s"), duration(2h));
  EXPECT_EQ(parse_openai_duration("7"), duration(7s));
  EXPECT_EQ(parse_openai_duration("0.25"), duration(250ms));
  EXPECT_FALSE(parse_openai_duration(""));
  EXPECT_FALSE(parse_openai_duration("soon"));
  EXPECT_FALSE(parse_openai_duration("5x"));
  EXPECT_FALSE(parse_openai_duration("-1s"));
  EXPECT_FALSE(parse_openai_duration("3 s"));
  EXPECT_FALSE(parse_openai_duration("99999h"));
}

TEST(ParseOpenAiDuration, DecimalsAreExact) {
  EXPECT_EQ(parse_openai_duration("59.999s"), duration(59999ms)) << "not a nanosecond short, as strtod gave";
  EXPECT_EQ(parse_openai_duration("1.05s"), duration(1050ms));
  EXPECT_EQ(parse_openai_duration("0.001s"), duration(1ms));
  EXPECT_EQ(parse_openai_duration("1.5ms"), duration(1500us));
  EXPECT_EQ(parse_openai_duration("2.5us"), duration(2500ns));
  EXPECT_EQ(parse_openai_duration("1.5ns"), duration(1ns)) << "below a nanosecond: dropped";
  EXPECT_EQ(parse_openai_duration("1.0000000019s"), duration(1s + 1ns)) << "truncated to the nanosecond";
  EXPECT_EQ(parse_openai_duration("1.5ns1.5ns"), duration(3ns)) << "the sum is truncated, not each part";
  EXPECT_EQ(parse_openai_duration("1959.5639651806m"), duration(117573837910836ns)) << "exact past 9 digits";
  EXPECT_EQ(parse_openai_duration("0.000000000000277777h"), duration(0ns)) << "0.999997 ns";
  EXPECT_EQ(parse_openai_duration("0.000000000000277778h"), duration(1ns));
  EXPECT_EQ(parse_openai_duration("0.1h"), duration(6min));
  EXPECT_EQ(parse_openai_duration("1.5m"), duration(90s));
  EXPECT_EQ(parse_openai_duration(".5s"), duration(500ms));
  EXPECT_EQ(parse_openai_duration("5."), duration(5s));
  EXPECT_EQ(parse_openai_duration("1h2m3.004s"), duration(1h + 2min + 3004ms));
  EXPECT_EQ(parse_openai_duration("000000000000000000000000001s"), duration(1s)) << "leading zeros";
}

TEST(ParseOpenAiDuration, RefusesWhatIsNotADuration) {
  for (const char* bad : {".", "s", "1..5s", "1.2.3s", "1e3s", "1µs", "1 ", " 1s", "1s ", "1S", "5d", "+1s", "1,5s"})
    EXPECT_FALSE(parse_openai_duration(bad)) << bad;
  EXPECT_FALSE(parse_openai_duration(std::string(65, '1') + "ns")) << "longer than 64 characters";
  EXPECT_EQ(parse_openai_duration("168h"), duration(168h)) << "a week exactly is still read";
  EXPECT_FALSE(parse_openai_duration("168h0m0.001s")) << "beyond a week is garbage";
  EXPECT_FALSE(parse_openai_duration("99999999999999999999999999999ns")) << "no overflow";
  EXPECT_FALSE(parse_openai_duration("100h100h"));
}

// The admission test's cases (unit/admission keeps its own copy) and the simulator's old ones.
TEST(FormatOpenAiDuration, KnownStrings) {
  EXPECT_EQ(format_openai_duration(0s), "0s");
  EXPECT_EQ(format_openai_duration(-5s), "0s");
  EXPECT_EQ(format_openai_duration(1ns), "1ms");
  EXPECT_EQ(format_openai_duration(300us), "1ms");
  EXPECT_EQ(format_openai_duration(20ms), "20ms");
  EXPECT_EQ(format_openai_duration(120ms), "120ms");
  EXPECT_EQ(format_openai_duration(250ms), "250ms");
  EXPECT_EQ(format_openai_duration(999ms), "999ms");
  EXPECT_EQ(format_openai_duration(999ms + 1ns), "1s") << "rounded up across the unit change";
  EXPECT_EQ(format_openai_duration(1s), "1s");
  EXPECT_EQ(format_openai_duration(1s + 1ns), "1.001s");
  EXPECT_EQ(format_openai_duration(1500ms), "1.5s");
  EXPECT_EQ(format_openai_duration(1050ms), "1.05s");
  EXPECT_EQ(format_openai_duration(59999ms), "59.999s");
  EXPECT_EQ(format_openai_duration(59999500us), "1m0s");
  EXPECT_EQ(format_openai_duration(6min), "6m0s");
  EXPECT_EQ(format_openai_duration(360s), "6m0s");
  EXPECT_EQ(format_openai_duration(90s), "1m30s");
  EXPECT_EQ(format_openai_duration(90500ms), "1m30.5s");
  EXPECT_EQ(format_openai_duration(1h), "1h0m0s");
  EXPECT_EQ(format_openai_duration(3725s), "1h2m5s");
  EXPECT_EQ(format_openai_duration(1h + 2min + 3s), "1h2m3s");
  EXPECT_EQ(format_openai_duration(1h + 20ms), "1h0m0.02s");
  EXPECT_EQ(format_openai_duration(49h), "49h0m0s") << "no days: Go counts hours";
  // The simulator's own formatter wrote microseconds below a second ("1.5ms" for 1500us) and cut
  // longer ones to the millisecond; the one codec rounds up to the millisecond. Its rate limiter
  // rounded up before formatting anyway; only an x-sim-retry-after with a sub-ms part reads
  // differently now.
  EXPECT_EQ(format_openai_duration(1500us), "2ms");
}

TEST(OpenAiDuration, RoundTripGivesTheDurationRoundedUpToTheMillisecond) {
  // Zero, below a millisecond, either side of 1ms, 1s, 1min, 1h, and up to the week the parser takes.
  // clang-format off
  std::vector<duration> cases = {
      0ns, 1ns, 999ns, 1us, 300us, 999999ns, 1ms, 1ms + 1ns, 999ms, 999ms + 1ns, 1s, 1s + 1ns, 1001ms,
      59999ms, 59999ms + 1ns, 60s, 1min + 1ms, 61s, 59min + 59999ms, 1h, 1h + 1ns, 2h, 23h + 59min + 59999ms,
      48h, 167h + 59min + 59999ms, 168h};
  // clang-format on
  for (auto ms = 0; ms <= 3000; ++ms) {  // every millisecond around the second, and a nudge above
    cases.push_back(std::chrono::milliseconds(ms));
    cases.push_back(std::chrono::milliseconds(ms) + 1ns);
  }
  std::mt19937_64 rng(20240607);
  for (auto top : {duration(1ms), duration(1s), duration(1min), duration(1h), duration(167h)}) {
    std::uniform_int_distribution<std::int64_t> pick(0, top.count());
    for (int i = 0; i < 2000; ++i) cases.push_back(duration(pick(rng)));
  }
  for (auto d : cases) {
    const auto text = format_openai_duration(d);
    const auto back = parse_openai_duration(text);
    ASSERT_TRUE(back) << d.count() << "ns -> " << text;
    ASSERT_EQ(*back, ceil_to_ms(d)) << d.count() << "ns -> " << text;
  }
  // Negative durations write "0s", which reads back as zero.
  EXPECT_EQ(parse_openai_duration(format_openai_duration(-1ns)), duration(0ns));
}
