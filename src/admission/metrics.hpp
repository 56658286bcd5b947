// admission_metrics: the admission component's own metrics: the wait queue (depth, lanes, wait
// time), the concurrency cap and the memory budget with its current use. Depth, lanes, cap and
// memory are read from the controller and the budget at scrape time; the wait histogram is fed by
// the controller as it admits (its on_admitted observer). Both must outlive this struct;
// thread-safe like its parts.
#pragma once

#include "admission/controller.hpp"
#include "admission/memory_budget.hpp"
#include "observability/component_metrics.hpp"

namespace sluice::admission {

class admission_metrics final : public obs::component_metrics {
 public:
  // Installs itself as `c`'s observer.
  admission_metrics(controller& c, const memory_budget& b);

  obs::histogram& queue_wait_seconds() noexcept { return queue_wait_.at(0); }

 private:
  obs::histogram_family& queue_wait_;
};

}  // namespace sluice::admission
