#include "sse/parser.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

using namespace sluice;

namespace {

struct ev {
  std::string type, data, id;
  std::optional<std::uint32_t> retry;
  bool operator==(const ev&) const = default;
};

std::ostream& operator<<(std::ostream& os, const ev& e) {
  return os << "{type=" << e.type << " data=" << e.data << " id=" << e.id << "}";
}

// Feeds `input` in pieces cut at `cuts` and returns the events plus whether the reported
// boundaries always fell right after a blank line.
std::vector<ev> parse_split(std::string_view input, const std::vector<std::size_t>& cuts, std::size_t max = 1 << 20) {
  sse::parser p(max);
  std::vector<ev> out;
  std::size_t prev = 0;
  auto run = [&](std::size_t end) {
    auto r = p.feed(input.substr(prev, end - prev), [&](const sse::event_view& e) {
      out.push_back({std::string(e.type), std::string(e.data), std::string(e.id), e.retry});
    });
    EXPECT_TRUE(r.has_value());
    prev = end;
  };
  for (auto c : cuts) run(c);
  run(input.size());
  return out;
}

const std::string kStream =
    ": keep-alive comment\n"
    "data: {\"id\":1}\n\n"
    "event: delta\r\n"
    "data: line one\r\n"
    "data: line two\r\n"
    "id: 42\r\n"
    "\r\n"
    "data:no-space\r"
    "retry: 1500\r"
    "\r"
    "data\n"
    "\n"
    "event: ignored-without-data\n"
    "\n"
    "data: [DONE]\n\n";

const std::vector<ev> kExpected = {
    {"", "{\"id\":1}", "", std::nullopt},
    {"delta", "line one\nline two", "42", std::nullopt},
    {"", "no-space", "42", 1500},
    {"", "", "42", std::nullopt},
    {"", "[DONE]", "42", std::nullopt},
};

}  // namespace

TEST(SseParser, ParsesWholeStream) { EXPECT_EQ(parse_split(kStream, {}), kExpected); }

TEST(SseParser, IdenticalEventsAtEverySplitPoint) {
  for (std::size_t i = 0; i <= kStream.size(); ++i) {
    ASSERT_EQ(parse_split(kStream, {i}), kExpected) << "split at " << i;
  }
}

TEST(SseParser, IdenticalEventsForEveryPairOfSplitPoints) {
  for (std::size_t i = 0; i <= kStream.size(); ++i)
    for (std::size_t j = i; j <= kStream.size(); ++j) ASSERT_EQ(parse_split(kStream, {i, j}), kExpected) << i << "," << j;
}

TEST(SseParser, IdenticalEventsForRandomChunkings) {
  std::mt19937 rng(7);
  for (int round = 0; round < 2000; ++round) {
    std::vector<std::size_t> cuts;
    std::size_t pos = 0;
    while (true) {
      pos += std::uniform_int_distribution<std::size_t>(0, 9)(rng);
      if (pos >= kStream.size()) break;
      cuts.push_back(pos);
    }
    ASSERT_EQ(parse_split(kStream, cuts), kExpected) << "round " << round;
  }
}

TEST(SseParser, ByteByByte) {
  std::vector<std::size_t> cuts;
  for (std::size_t i = 1; i < kStream.size(); ++i) cuts.push_back(i);
  EXPECT_EQ(parse_split(kStream, cuts), kExpected);
}

TEST(SseParser, ReportsBoundaryAfterLastCompleteEvent) {
  sse::parser p;
  std::string chunk = "data: a\n\ndata: b\n\ndata: partial";
  int n = 0;
  auto r = p.feed(chunk, [&](const sse::event_view&) { ++n; });
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(n, 2);
  EXPECT_EQ(*r, chunk.find("data: partial"));
  EXPECT_EQ(p.pending_bytes(), std::string("data: partial").size());
  auto r2 = p.feed("\n\n", [&](const sse::event_view& e) { EXPECT_EQ(e.data, "partial"); ++n; });
  EXPECT_EQ(*r2, 2u);
  EXPECT_EQ(n, 3);
  auto r3 = p.feed("data: x", [&](const sse::event_view&) { ++n; });
  EXPECT_EQ(*r3, sse::parser::npos);
}

TEST(SseParser, CrlfSplitAcrossChunksIsOneLineEnding) {
  sse::parser p;
  std::vector<std::string> got;
  auto on = [&](const sse::event_view& e) { got.emplace_back(e.data); };
  ASSERT_TRUE(p.feed("data: x\r", on).has_value());
  ASSERT_TRUE(p.feed("\n\r", on).has_value());  // LF completes CRLF; CR is the blank line
  EXPECT_EQ(got, std::vector<std::string>{"x"});
  ASSERT_TRUE(p.feed("\ndata: y\n\n", on).has_value());  // this LF completes the CR above
  EXPECT_EQ(got, (std::vector<std::string>{"x", "y"}));
}

TEST(SseParser, EnforcesMaximumEventSize) {
  sse::parser p(32);
  auto ok = p.feed("data: short\n\n", [](const sse::event_view&) {});
  ASSERT_TRUE(ok.has_value());
  auto r = p.feed("data: " + std::string(40, 'x'), [](const sse::event_view&) {});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.err().code, errc::upstream_protocol);
  EXPECT_NE(r.err().message.find("32"), std::string::npos);
}

TEST(SseParser, MaximumCountsWholeEventNotLine) {
  sse::parser p(24);
  auto r = p.feed("data: 0123456789\ndata: 0123456789\n\n", [](const sse::event_view&) {});
  EXPECT_FALSE(r.has_value());
}

TEST(SseParser, StopsWhenCallbackReturnsFalse) {
  sse::parser p;
  int n = 0;
  auto r = p.feed("data: 1\n\ndata: 2\n\n", [&](const sse::event_view&) { ++n; return false; });
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(n, 1);
  EXPECT_EQ(*r, 9u);
}

TEST(SseWriter, FormatsMultiLineData) {
  EXPECT_EQ(sse::format_event("a\nb"), "data: a\ndata: b\n\n");
  EXPECT_EQ(sse::format_event("{}", "sluice.schema"), "event: sluice.schema\ndata: {}\n\n");
}

TEST(SseWriter, RoundTripsThroughParser) {
  for (std::string data : {"", "x", "a\nb\nc", "{\"k\": \"v: w\"}"}) {
    sse::parser p;
    std::string got;
    int n = 0;
    ASSERT_TRUE(p.feed(sse::format_event(data, "t"), [&](const sse::event_view& e) {
                   got = e.data;
                   EXPECT_EQ(e.type, "t");
                   ++n;
                 }).has_value());
    EXPECT_EQ(n, 1);
    EXPECT_EQ(got, data);
  }
}

// Found by fuzz_sse (a 20-minute run): a CRLF split between two feeds counted its LF into the next
// event, so an event of exactly max_event_bytes passed fed whole and failed fed in pieces.
TEST(SseParser, ACrlfSplitAcrossFeedsCountsItsLfInTheEventItEnds) {
  const std::string first = "data:a\r\n\r";              // 10 bytes with the LF that follows
  const std::string second = "\ndata:012345678\n\n";      // that LF, then an event of 16 bytes
  for (std::size_t cut : {first.size(), std::size_t{0}}) {
    sse::parser p(16);
    std::vector<std::string> got;
    auto on = [&](const sse::event_view& e) { got.emplace_back(e.data); };
    const std::string all = first + second;
    const std::size_t at = cut == 0 ? all.size() : cut;
    ASSERT_TRUE(p.feed(std::string_view(all).substr(0, at), on).has_value()) << cut;
    ASSERT_TRUE(p.feed(std::string_view(all).substr(at), on).has_value()) << cut;
    EXPECT_EQ(got, (std::vector<std::string>{"a", "012345678"})) << cut;
  }
  // A line whose CRLF passes the cap fails however it is cut, also when its LF comes alone.
  for (std::size_t cut : {std::size_t{16}, std::size_t{0}}) {
    sse::parser p(16);
    const std::string all = "data:0123456789\r\n\r\n";  // 15 + CRLF: 17 bytes
    const std::size_t at = cut == 0 ? all.size() : cut;
    auto on = [](const sse::event_view&) {};
    auto a = p.feed(std::string_view(all).substr(0, at), on);
    const bool failed = !a.has_value() || !p.feed(std::string_view(all).substr(at), on).has_value();
    EXPECT_TRUE(failed) << cut;
  }
}
