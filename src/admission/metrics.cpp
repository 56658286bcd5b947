#include "admission/metrics.hpp"

namespace sluice::admission {

admission_metrics::admission_metrics(controller& c, const memory_budget& b)
    : queue_wait_(histograms("sluice_queue_wait_seconds", "Time admitted requests spent waiting in the admission queue.",
                             obs::latency_buckets)) {
  scraped("sluice_queue_depth", "Requests waiting in the admission queue.", {},
          [&c] { return static_cast<double>(c.queued()); });
  scraped("sluice_queue_lanes", "Client keys (lanes) with requests waiting in the admission queue.", {},
          [&c] { return static_cast<double>(c.lanes()); });
  scraped("sluice_max_streams", "The configured cap on concurrent streams (--max-streams).", {},
          [&c] { return static_cast<double>(c.max_streams()); });
  scraped("sluice_memory_budget_bytes", "The configured memory budget for request and stream buffers.", {},
          [&b] { return static_cast<double>(b.budget()); });
  scraped("sluice_memory_used_bytes",
          "Memory counted against the budget right now (what --shed-threshold is compared with).", {},
          [&b] { return static_cast<double>(b.rss()); });
  c.set_observers({[this](duration waited) { queue_wait_seconds().observe(waited); }});
}

}  // namespace sluice::admission
