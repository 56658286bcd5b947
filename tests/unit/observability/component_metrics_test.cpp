// obs::component_metrics, the base of every component's metrics struct: its families show up in
// the registry's exposition, scraped series are read at scrape time, and sharded counters lose
// nothing under many threads.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "observability/component_metrics.hpp"
#include "observability/metrics.hpp"

using namespace sluice;

namespace {

struct widget_metrics final : obs::component_metrics {
  widget_metrics() {
    auto& fam = counter_family("sluice_widgets_total", "Widgets made, by color.");
    red = &fam.Add({{"color", "red"}});
    blue = &fam.Add({{"color", "blue"}});
    open = &gauge("sluice_widgets_open", "Widgets open now.");
    scraped("sluice_widget_queue", "Widgets queued (read at scrape time).", {}, [this] { return queued.load(); });
    scraped("sluice_widget_errors_total", "Errors, by kind.", {{"kind", "a"}}, [] { return 1.0; });
    scraped("sluice_widget_errors_total", "Errors, by kind.", {{"kind", "b"}}, [] { return 2.0; });
    bytes = &sharded("sluice_widget_bytes_total", "Bytes, sharded.", {{"direction", "out"}});
  }
  prometheus::Counter* red;
  prometheus::Counter* blue;
  prometheus::Gauge* open;
  obs::sharded_counter* bytes;
  std::atomic<double> queued{0};
};

}  // namespace

TEST(component_metrics, families_reach_the_exposition_and_scrapes_read_live_values) {
  obs::metrics_registry reg;
  auto w = std::make_shared<widget_metrics>();
  reg.add_collectable(w);
  w->red->Increment(2);
  w->open->Set(5);
  w->queued = 7;
  w->bytes->add(40);
  w->bytes->add(2);
  const std::string text = reg.serialize();
  EXPECT_NE(text.find("sluice_widgets_total{color=\"red\"} 2"), std::string::npos) << text;
  EXPECT_NE(text.find("sluice_widgets_total{color=\"blue\"} 0"), std::string::npos);
  EXPECT_NE(text.find("sluice_widgets_open 5"), std::string::npos);
  EXPECT_NE(text.find("# TYPE sluice_widget_queue gauge"), std::string::npos);
  EXPECT_NE(text.find("sluice_widget_queue 7"), std::string::npos);
  // Two scraped series of one name make one family with two samples.
  EXPECT_EQ(text.find("# TYPE sluice_widget_errors_total counter"), text.rfind("# TYPE sluice_widget_errors_total counter"));
  EXPECT_NE(text.find("sluice_widget_errors_total{kind=\"a\"} 1"), std::string::npos);
  EXPECT_NE(text.find("sluice_widget_errors_total{kind=\"b\"} 2"), std::string::npos);
  EXPECT_NE(text.find("sluice_widget_bytes_total{direction=\"out\"} 42"), std::string::npos);
  w->queued = 8;
  EXPECT_NE(reg.serialize().find("sluice_widget_queue 8"), std::string::npos);
}

TEST(sharded_counter, many_threads_lose_nothing) {
  obs::sharded_counter c;
  std::vector<std::thread> ts;
  constexpr int threads = 20, per = 10000;  // more threads than shards: some share a slot
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&] {
      for (int i = 0; i < per; ++i) c.add(3);
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(c.value(), 3ull * threads * per);
}
