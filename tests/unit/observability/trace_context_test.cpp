#include "observability/trace_context.hpp"

#include <gtest/gtest.h>

#include <set>

using namespace sluice::obs;

TEST(TraceContext, ParsesTheSpecsExampleAndFormatsItBack) {
  const std::string h = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  auto p = parse_traceparent(h);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->trace.hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(p->parent.hex(), "00f067aa0ba902b7");
  EXPECT_TRUE(p->sampled);
  EXPECT_EQ(format_traceparent(p->trace, p->parent, p->sampled), h);
  auto u = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
  ASSERT_TRUE(u);
  EXPECT_FALSE(u->sampled);
  // Flags other than sampled are carried as not-sampled-or-sampled by their low bit.
  EXPECT_TRUE(parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03")->sampled);
}

TEST(TraceContext, RefusesWhatTheSpecRefuses) {
  for (const char* bad : {
           "",                                                          // nothing
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",      // no flags
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",  // version 00 with more
           "00-00000000000000000000000000000000-00f067aa0ba902b7-01",   // zero trace id
           "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",   // zero parent id
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",   // uppercase
           "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // version ff
           "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // not hex
           "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // separators
           "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",
           "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",  // a later version: '-' after flags
       })
    EXPECT_FALSE(parse_traceparent(bad)) << bad;
}

TEST(TraceContext, AFutureVersionIsReadForItsFirstFourFields) {
  auto p = parse_traceparent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-will-be-like");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->trace.hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_TRUE(p->sampled);
}

TEST(TraceContext, TracestateIsKeptOnlyWhenWellFormedAndSmall) {
  EXPECT_TRUE(acceptable_tracestate("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"));
  EXPECT_FALSE(acceptable_tracestate(""));
  EXPECT_FALSE(acceptable_tracestate("no-equals"));
  EXPECT_FALSE(acceptable_tracestate("a=1,b"));
  EXPECT_FALSE(acceptable_tracestate("a=1\n"));
  EXPECT_FALSE(acceptable_tracestate(std::string(513, 'a') + "=1"));
  std::string many;
  for (int i = 0; i < 33; ++i) many += (i ? "," : "") + std::string("k") + std::to_string(i) + "=v";
  EXPECT_FALSE(acceptable_tracestate(many)) << "at most 32 members";
}

TEST(TraceContext, NewIdsAreNonZeroAndDistinct) {
  std::set<std::string> traces, spans;
  for (int i = 0; i < 1000; ++i) {
    auto t = new_trace_id();
    auto s = new_span_id();
    EXPECT_TRUE(t.valid());
    EXPECT_TRUE(s.valid());
    traces.insert(t.hex());
    spans.insert(s.hex());
  }
  EXPECT_EQ(traces.size(), 1000u);
  EXPECT_EQ(spans.size(), 1000u);
}

TEST(TraceContext, RatioSamplingDecidesByTheTraceIdAlone) {
  EXPECT_FALSE(sampled_by_ratio(new_trace_id(), 0));
  EXPECT_TRUE(sampled_by_ratio(new_trace_id(), 1));
  int sampled = 0;
  for (int i = 0; i < 20000; ++i) {
    auto t = new_trace_id();
    const bool a = sampled_by_ratio(t, 0.25);
    EXPECT_EQ(a, sampled_by_ratio(t, 0.25)) << "the same trace, the same decision";
    sampled += a ? 1 : 0;
  }
  // 20,000 draws at 0.25: 5,000 expected, a standard deviation of about 61.
  EXPECT_GT(sampled, 4600);
  EXPECT_LT(sampled, 5400);
}
