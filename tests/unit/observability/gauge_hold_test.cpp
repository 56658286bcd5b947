#include "observability/gauge_hold.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "observability/stopwatch.hpp"

namespace sluice::obs {
namespace {

TEST(gauge_hold, raises_while_alive_and_lowers_on_destruction) {
  prometheus::Gauge g;
  {
    gauge_hold a(g);
    EXPECT_EQ(g.Value(), 1.0);
    {
      gauge_hold b(g, 4096);
      EXPECT_EQ(g.Value(), 4097.0);
    }
    EXPECT_EQ(g.Value(), 1.0);
  }
  EXPECT_EQ(g.Value(), 0.0);
}

TEST(gauge_hold, move_transfers_the_hold_exactly_once) {
  prometheus::Gauge g;
  std::optional<gauge_hold> outer;
  {
    gauge_hold a(g, 2);
    gauge_hold b(std::move(a));
    EXPECT_FALSE(a.holds());  // NOLINT(bugprone-use-after-move): checking the moved-from state
    EXPECT_TRUE(b.holds());
    EXPECT_EQ(g.Value(), 2.0);
    outer.emplace(std::move(b));
  }
  EXPECT_EQ(g.Value(), 2.0);  // both a and b are gone, the hold lives on in outer
  outer.reset();
  EXPECT_EQ(g.Value(), 0.0);
}

TEST(gauge_hold, move_assignment_releases_the_old_hold_first) {
  prometheus::Gauge g1, g2;
  gauge_hold a(g1, 3);
  gauge_hold b(g2, 5);
  a = std::move(b);
  EXPECT_EQ(g1.Value(), 0.0);
  EXPECT_EQ(g2.Value(), 5.0);
  a = gauge_hold();
  EXPECT_EQ(g2.Value(), 0.0);
}

TEST(gauge_hold, set_amount_and_reset) {
  prometheus::Gauge g;
  gauge_hold h(g, 100);
  h.set_amount(250);
  EXPECT_EQ(g.Value(), 250.0);
  h.set_amount(10);
  EXPECT_EQ(g.Value(), 10.0);
  h.reset();
  EXPECT_EQ(g.Value(), 0.0);
  h.reset();  // idempotent
  EXPECT_EQ(g.Value(), 0.0);
}

TEST(gauge_hold, survives_vector_reallocation) {
  prometheus::Gauge g;
  {
    std::vector<gauge_hold> holds;
    for (int i = 0; i < 100; ++i) holds.emplace_back(g);
    EXPECT_EQ(g.Value(), 100.0);
    holds.erase(holds.begin(), holds.begin() + 40);
    EXPECT_EQ(g.Value(), 60.0);
  }
  EXPECT_EQ(g.Value(), 0.0);
}

TEST(stopwatch, measures_elapsed_time_and_lap_restarts_from_now) {
  using namespace std::chrono_literals;
  stopwatch w;
  const auto t0 = w.started();
  // Spin (no sleep) until the steady clock has moved 2 ms past the start.
  while (stopwatch::clock::now() < t0 + 2ms) {
  }
  EXPECT_GE(w.elapsed(), 2ms);
  EXPECT_GE(w.elapsed_seconds(), 0.002);
  const double lap = w.lap_seconds();
  EXPECT_GE(lap, 0.002);
  EXPECT_GE(w.started(), t0 + 2ms);  // the next lap counts from the previous one's end
  const auto lap_end = w.started();
  w.restart();
  EXPECT_GE(w.started(), lap_end);
}

}  // namespace
}  // namespace sluice::obs
