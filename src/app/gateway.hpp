// gateway: the composition root of `sluice serve`. Builds every part from serve_options, owns their
// lifetimes (worker threads, per-thread servers and upstream clients, the process-wide metrics,
// admission and memory budget), and runs, drains and stops them. start()/drain()/stop() are called
// from one controlling thread (main, or a test).
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <vector>

#include "admission/client_keys.hpp"
#include "admission/controller.hpp"
#include "admission/memory_budget.hpp"
#include "admission/pod_key_limits.hpp"
#include "admission/shared_key_limits.hpp"
#include "admission/stream_registry.hpp"
#include "app/deployment.hpp"
#include "app/pod.hpp"
#include "app/pod_handover.hpp"
#include "app/serve_options.hpp"
#include "core/error.hpp"
#include "admission/metrics.hpp"
#include "http/server.hpp"
#include "http/server_metrics.hpp"
#include "observability/metrics.hpp"
#include "proxy/dispatcher.hpp"
#include "proxy/request_metrics.hpp"
#include "proxy/relay/stream_metrics.hpp"
#include "proxy/services.hpp"
#include "proxy/health/upstream_monitor.hpp"
#include "redis/availability.hpp"
#include "redis/client.hpp"
#include "redis/leases.hpp"
#include "routing/router.hpp"
#include "routing/pod_budget.hpp"
#include "routing/shared_budget.hpp"
#include "schema/cache.hpp"
#include "jobs/metrics.hpp"
#include "jobs/redis_queue.hpp"
#include "jobs/response_store.hpp"
#include "proxy/responses/redis_worker.hpp"
#include "runtime/task_group.hpp"
#include "runtime/loop_pool.hpp"

namespace sluice::app {

// The address of a `listen` option ("HOST:PORT", an IP literal).
result<tcp::endpoint> listen_endpoint(const std::string& listen);

class gateway {
 public:
  // Builds every part, in named steps; a config that cannot run (a bad keys-file, an unresolvable
  // Redis URL, a malformed queue secret, a pod table too small...) is the error returned.
  // `upstream_key` is the key value itself (from the environment); empty for pass-through.
  // `rss_source` replaces the /proc RSS reading (tests fake memory pressure with it).
  // `pod`: this process is one worker of `--processes N` (its memory budget then holds the pod's
  // summed RSS, and its /metrics shows the supervisor's counters).
  static result<std::unique_ptr<gateway>> make(serve_options opts, std::string upstream_key,
                                               admission::memory_budget::rss_source rss_source = {}, pod_link pod = {});
  ~gateway();
  gateway(const gateway&) = delete;
  gateway& operator=(const gateway&) = delete;

  // Binds every worker thread's listener and starts serving. Returns the bound address. With
  // `inherited_listener` (a listening socket's descriptor, from the supervisor) every thread accepts
  // on that socket instead of binding its own.
  // `inherited_admin` likewise for admin-listen.
  result<tcp::endpoint> start(int inherited_listener = -1, int inherited_admin = -1);
  // admin-listen's bound address once started (nullopt without one).
  std::optional<tcp::endpoint> admin_endpoint() const noexcept { return admin_endpoint_; }
  // The SIGTERM sequence: readiness fails at once; serve on for drain_delay; stop accepting; let
  // running streams finish for up to drain_timeout; end the rest with an in-band error; stop.
  void drain();
  // A reload replaced this process (SIGUSR2 from the supervisor): stop accepting at once (the new
  // workers accept on the same socket), answer what arrives on open connections with Connection:
  // close, let running streams finish for up to drain_timeout, end the rest in-band; stop.
  void retire();
  // Closes every connection and joins the threads. Idempotent.
  void stop();

  const serve_options& options() const noexcept { return opts_; }
  const deployment& mode() const noexcept { return mode_; }
  std::uint64_t open_connections() const noexcept { return server_shared_.open_connections.load(); }
  obs::metrics_registry& metrics() noexcept { return metrics_; }
  admission::controller& admission() noexcept { return *admission_; }
  admission::memory_budget& budget() noexcept { return *budget_; }
  admission::stream_registry& streams() noexcept { return streams_; }
  // Samples memory once now (the pressure loop also runs every memory-sample-interval).
  void sample_memory();
  // The components' own metrics.
  proxy::request_metrics& request_stats() noexcept { return *request_metrics_; }
  proxy::stream_metrics& stream_stats() noexcept { return *stream_metrics_; }
  admission::admission_metrics& admission_stats() noexcept { return *admission_metrics_; }
  proxy::upstream_metrics& upstream_stats() noexcept { return *upstream_metrics_; }
  // Structured outputs: the counters of the process-wide compiled-schema cache.
  schema::cache_stats schema_cache_stats() const { return schemas_->snapshot(); }
  routing::router& router() noexcept { return *router_; }
  // With --redis: the shared limits' state (null without).
  const redis::availability* shared_limits() const noexcept { return redis_health_.get(); }
  const redis::lease_keeper* leases() const noexcept { return leases_.get(); }

 private:
  struct thread_parts {  // one per thread: its dispatcher (and so its pipeline) and server
    std::unique_ptr<proxy::dispatcher> dispatcher;
    std::unique_ptr<http::server> server;
  };
  // `opts`: routing finished. Builds nothing: make() runs assemble()'s steps.
  gateway(serve_options opts, pod_link pod, deployment mode);

  // The steps of make(), in order.
  result<void> assemble(const std::string& upstream_key, admission::memory_budget::rss_source rss_source);
  // The router with each upstream's budget and circuit where the deployment keeps them.
  result<void> build_router(const std::string& upstream_key);
  // The memory budget and the admission controller (a pod worker's: the pod's).
  void build_admission(admission::memory_budget::rss_source rss_source);
  // keys-file read, and its limits held where the deployment says (with --redis, every shared part).
  result<void> build_key_limits();
  // The key limits built, whichever place holds them (null without keys-file).
  admission::key_limits* key_limits() noexcept;
  // The components' metrics, the secret scrubber and the services every pipeline shares.
  void build_services();
  // The response store, its pod index, and the config every pipeline shares.
  void build_responses();
  // Registers every component's metrics struct with metrics_.
  result<void> register_metrics();
  // One dispatcher (with its pipeline) and one server per thread.
  void build_workers();

  // The steps of start().
  result<void> start_admin(int inherited_admin);
  result<tcp::endpoint> bind_listeners(int inherited_listener);
  void start_pressure_and_pod_loops();
  void start_jobs();
  void start_redis();

  void log_pressure(const admission::pressure_report& r) const;
  // drain() and retire(): waits up to drain_timeout for the running streams, ends the rest.
  void finish_streams();
  // --redis: whether Redis decides and the lease keeper (before the router: its budgets use them).
  result<void> prepare_shared_limits();
  // --redis: the client, and the shared client-key limits.
  result<void> build_shared_limits();
  // --queue redis: the fleet's queue on scripts from `first_script`, its secret and its notifier.
  result<void> build_redis_queue(std::size_t first_script);
  // --queue redis: the queue secret read from queue-secret-env (none: unset); an error when malformed.
  result<void> load_queue_secret();
  // --queue redis: Redis's maxmemory-policy checked (redis-eviction-check); an error under refuse.
  result<void> check_eviction_policy();

  serve_options opts_;  // routing finished: the upstream list is final
  pod_link pod_;        // a worker of --processes N: the pod's shared segment and its row
  deployment mode_;     // decided once, from opts_ and pod_
  // --redis (docs/scale-out.md): whether Redis decides, the slots this replica holds, and what the
  // shared upstream budgets share (its settles are tasks: it outlives the pool's last run).
  std::unique_ptr<redis::availability> redis_health_;
  std::unique_ptr<redis::lease_keeper> leases_;
  std::unique_ptr<routing::shared_budget_context> budgets_;
  std::unique_ptr<routing::router> router_;
  std::unique_ptr<schema::schema_cache> schemas_;  // before metrics_: its scrape callbacks read it
  obs::metrics_registry metrics_;
  std::unique_ptr<admission::memory_budget> budget_;
  std::unique_ptr<admission::controller> admission_;
  admission::stream_registry streams_;
  std::optional<admission::client_keys> keys_;  // local limits (no --redis)
  // A worker of --processes N without --redis: the keys' limits held for the pod.
  std::unique_ptr<admission::pod_key_limits> pod_keys_;
  // --redis: the shared client-key limits (its settles are tasks: it outlives the pool's last
  // run), and the tasks of the Redis connections and the lease renewals.
  std::unique_ptr<admission::shared_key_limits> shared_keys_;
  std::shared_ptr<redis::shared_metrics> shared_metrics_;
  runtime::task_group redis_tasks_;
  proxy::drain_state drain_;
  proxy::secret_scrubber secrets_;  // the upstream keys, masked out of what upstreams say to clients
  // trace-endpoint: the span exporter and its thread (before services_: every pipeline's finish
  // offers to it, so it is destroyed after them, sending what they left).
  std::unique_ptr<obs::span_exporter> spans_;
  std::unique_ptr<proxy::services> services_;
  std::unique_ptr<upstream::ssl::context> tls_;
  std::unique_ptr<proxy::shared_config> shared_;
  http::server_shared server_shared_;
  // The components' metrics: shared_ptr because the registry holds them weakly.
  std::shared_ptr<proxy::request_metrics> request_metrics_;
  std::shared_ptr<proxy::stream_metrics> stream_metrics_;
  std::shared_ptr<proxy::upstream_metrics> upstream_metrics_;
  std::shared_ptr<admission::admission_metrics> admission_metrics_;
  std::shared_ptr<http::server_metrics> server_metrics_;
  std::shared_ptr<pod_metrics> pod_metrics_;  // with pod_ only
  std::unique_ptr<pod_handover> handover_;    // with pod_ and the in-process store
  std::unique_ptr<proxy::upstream_monitor> monitor_;  // probes and engine scrapes, on thread 0
  // Background responses (docs/queue.md): the in-process store and job queue, its metrics, and
  // the job slots that run its jobs (cancelled at stop).
  std::unique_ptr<jobs::memory_store> responses_;
  // --queue redis: the fleet's queue and this process's worker side of it (built at start).
  std::unique_ptr<jobs::redis_queue> queue_;
  std::unique_ptr<jobs::redis_notifier> notifier_;  // its Pub/Sub wakeups (one subscriber connection)
  std::unique_ptr<proxy::redis_worker> redis_worker_;
  std::optional<jobs::credential_seal> seal_;  // --queue redis: queue-secret-env's, when set
  std::shared_ptr<jobs::metrics> jobs_metrics_;
  runtime::task_group job_slots_;
  // The background loops on thread 0 (memory pressure, probes, engine scrapes, the responses'
  // retention): cancelled at stop.
  runtime::task_group background_;
  runtime::loop_pool pool_;
  std::vector<thread_parts> threads_;  // after pool_: destroyed first, while the io_contexts still exist
  // admin-listen: one server on thread 0 with its own connection cap, answering probes and metrics
  // through thread 0's dispatcher (after pool_ and the threads' dispatchers it uses: destroyed first).
  // The admin address's requests go to thread 0's dispatcher, which answers probes and metrics only.
  // Defined here: gateway.cpp destroys it and gateway_run.cpp makes it (a unity batch had hidden
  // that one of them saw it incomplete; clang-tidy's separate compile did not).
  class admin_handler final : public http::request_handler {
   public:
    explicit admin_handler(proxy::dispatcher& p) : p_(p) {}
    task<bool> handle(http::request& req, http::connection& conn) override { return p_.handle_admin(req, conn); }
    task<void> reject(const error& e, http::connection& conn) override { return p_.reject(e, conn); }

   private:
    proxy::dispatcher& p_;
  };
  http::server_options admin_opts_;
  http::server_shared admin_shared_;
  std::unique_ptr<admin_handler> admin_handler_;
  std::unique_ptr<http::server> admin_server_;
  std::optional<tcp::endpoint> admin_endpoint_;
  std::unique_ptr<redis::client> redis_;  // after pool_ likewise (its connections are on its threads)
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace sluice::app
