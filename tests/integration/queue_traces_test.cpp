// A trace through the fleet's queue (--queue redis): the front's request and the worker's run of it
// are one trace. The worker's server span is a child of the front's (the job's stored traceparent),
// its upstream attempt a child of its own: a client's trace reaches the upstream through Redis.
#include <gtest/gtest.h>

#include "otlp_collector.hpp"
#include "queue_fleet.hpp"
#include "test_client.hpp"

using namespace sluice;
using namespace std::chrono_literals;

namespace {
struct QueueTraces : test::queue_fleet {};
}  // namespace

TEST_F(QueueTraces, AWorkersSpansJoinTheFrontsTrace) {
  test::collector col;
  const std::vector<std::string> traced{"--trace-endpoint", col.listener.url(), "--trace-export-interval", "20ms"};
  auto f = front(traced);
  auto w = worker(traced);
  ASSERT_NE(f->port, 0);
  ASSERT_NE(w->port, 0);
  const std::string client_trace = "0af7651916cd43dd8448eb211c80319c", client_span = "b7ad6b7169203331";
  auto r = test::post_chat(f->port, true, {{"traceparent", "00-" + client_trace + "-" + client_span + "-01"}});
  ASSERT_EQ(r.result_int(), 200u) << r.body();
  ASSERT_NE(r.body().find("[DONE]"), std::string::npos);

  // The front's server span, the worker's, and the worker's attempt at least.
  std::map<std::string, boost::json::object> spans;
  const boost::json::object *front_span = nullptr, *worker_span = nullptr, *attempt = nullptr;
  test::wait_until([&] {
    spans = col.spans();
    front_span = worker_span = attempt = nullptr;
    for (const auto& [id, s] : spans) {
      if (s.at("kind") == 2 && s.at("parentSpanId") == client_span.c_str()) front_span = &s;
      if (s.at("kind") == 2 && test::attribute(s, "sluice.job") == "true") worker_span = &s;
      if (s.at("kind") == 3) attempt = &s;
    }
    return front_span && worker_span && attempt;
  }, 15000ms);
  ASSERT_TRUE(front_span && worker_span && attempt) << spans.size() << " spans";
  for (const auto& [id, s] : spans) EXPECT_EQ(s.at("traceId"), client_trace.c_str()) << "one trace, front and worker";
  EXPECT_EQ(worker_span->at("parentSpanId"), front_span->at("spanId")) << "the worker's run is a child of the front's request";
  EXPECT_EQ(attempt->at("parentSpanId"), worker_span->at("spanId")) << "the worker talked to the upstream";
}
