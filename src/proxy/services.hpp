// The process-wide parts every worker thread's pipeline uses: the components' metrics, admission
// (permits, queue, memory budget, the registry of live streams), optional client keys and the
// drain state. Built and owned by app::gateway; all members are thread-safe (atomics or locked).
#pragma once

#include <functional>
#include <optional>
#include <string_view>
#include <string>

#include "admission/client_keys.hpp"
#include "admission/controller.hpp"
#include "admission/memory_budget.hpp"
#include "admission/options.hpp"
#include "admission/stream_registry.hpp"
#include "jobs/credential_seal.hpp"
#include "jobs/metrics.hpp"
#include "jobs/redis_notifier.hpp"
#include "jobs/redis_queue.hpp"
#include "jobs/response_store.hpp"
#include "observability/metrics.hpp"
#include "observability/span_exporter.hpp"
#include "proxy/drain_state.hpp"
#include "proxy/request_metrics.hpp"
#include "proxy/secret_scrubber.hpp"
#include "proxy/relay/stream_metrics.hpp"
#include "proxy/upstream_metrics.hpp"
#include "redis/client.hpp"

namespace sluice::proxy {

class redis_worker;

// A worker process of a pod (--processes N) with the in-process store: which other worker holds a
// stored response, and handing a client's connection to it (app/pod_handover.cpp,
// docs/processes.md). Thread-safe.
class response_handover {
 public:
  virtual ~response_handover() = default;
  // The worker row of another live worker process that holds `id`; nullopt: none does (or this one).
  virtual std::optional<std::size_t> holder(std::string_view id) const = 0;
  // Hands connection `fd` to worker `row` with `bytes` (the request as read, and what followed):
  // true once it is on its way (this process then lets the connection go without a FIN).
  virtual bool hand_over(std::size_t row, int fd, std::string_view bytes) const = 0;
};

struct services {
  obs::metrics_registry& metrics;  // the exposition, for GET /metrics
  request_metrics& requests;
  stream_metrics& streams;
  upstream_metrics& upstreams;
  admission::admission_queue& admission;  // local: admission::controller
  admission::memory_budget& budget;
  admission::stream_registry& live_streams;
  admission::key_limits* keys;  // null: no client keys configured (no authentication); local: client_keys
  const admission::options& admission_opts;
  drain_state& drain;
  // The gateway's upstream keys, masked out of whatever an upstream says to a client.
  const secret_scrubber& secrets;
  // Background responses and stored streams (docs/queue.md); null: not served (404).
  jobs::memory_store* responses = nullptr;
  jobs::metrics* jobs = nullptr;
  // --queue redis: background jobs and their responses in Redis (null: in `responses`), and the
  // client whose connection of the calling thread carries them.
  jobs::redis_queue* queue = nullptr;
  jobs::redis_notifier* notifier = nullptr;  // (--queue redis) wakeups through Pub/Sub; null: poll
  redis::client* redis = nullptr;
  redis_worker* queue_worker = nullptr;  // mirrors recorded streams into Redis (set once started)
  // --queue redis: seals a client's own upstream key for the queue (queue-secret-env); null: unset.
  const jobs::credential_seal* seal = nullptr;
  // A worker process of a pod (--processes N): GET /metrics answers this of the process's own
  // exposition (the pod's merged view); unset: the process's own.
  std::function<task<std::string>(std::string own)> pod_metrics = {};
  // A worker process of a pod with the in-process store: GET, cancel and resume of a response
  // another worker holds go to that worker. Null: every response is this process's.
  const response_handover* handover = nullptr;
  // Traces (docs/operations.md, "Traces"): the sampling settings and the exporter. Null exporter:
  // no span is built; a traceparent still goes upstream (and with queued jobs), unsampled.
  const obs::trace_options* tracing = nullptr;
  obs::span_exporter* spans = nullptr;
};

}  // namespace sluice::proxy
