// stream_metrics: the relay's own metrics: streams in flight (a live_count the drain waits on),
// relay buffers and the bytes they hold, bytes relayed each way (sharded per thread: bumped per
// read and write), write stalls, time to first token and the gaps between content events. Built
// by the composition root; every member is lock-free and thread-safe.
#pragma once

#include "observability/component_metrics.hpp"
#include "observability/metrics.hpp"
#include "runtime/live_count.hpp"

namespace sluice::proxy {

class stream_metrics final : public obs::component_metrics {
 public:
  stream_metrics();

  // Forwarded requests (streams and whole answers) in flight; the drain waits for zero.
  runtime::live_count& streams_active() noexcept { return active_; }
  prometheus::Gauge& stream_active_buffers() noexcept { return *buffers_; }
  prometheus::Gauge& stream_buffered_bytes() noexcept { return *buffered_; }
  obs::sharded_counter& stream_bytes_total(obs::byte_direction d) noexcept { return *bytes_[obs::index_of(d)]; }
  prometheus::Counter& write_stalls_total() noexcept { return *stalls_; }
  obs::histogram& time_to_first_token_seconds() noexcept { return ttft_.at(0); }
  obs::histogram& inter_token_seconds() noexcept { return gaps_.at(0); }

 private:
  runtime::live_count active_;
  prometheus::Gauge* buffers_;
  prometheus::Gauge* buffered_;
  prometheus::Counter* stalls_;
  std::array<obs::sharded_counter*, obs::all_byte_directions.size()> bytes_{};
  obs::histogram_family& ttft_;
  obs::histogram_family& gaps_;
};

}  // namespace sluice::proxy
