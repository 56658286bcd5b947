// app::gateway, running (gateway.hpp): the listeners bound, the loops started (memory pressure, the
// pod's expositions, jobs, Redis), then drain, retire and stop. Its assembly is gateway.cpp's.
#include "app/gateway.hpp"

#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/asio/this_coro.hpp>
#include <thread>

#include "config/option_table.hpp"
#include "jobs/redis_eviction.hpp"
#include "observability/log.hpp"
#include "runtime/loop_pool.hpp"

namespace sluice::app {

namespace {

// A worker process of a pod: its exposition in the shared segment every `every`, and at once
// (within `tick`) when another worker answering /metrics asks for fresh figures.
task<void> publish_loop(const obs::metrics_registry& metrics, pod_link pod, duration every, duration tick) {
  net::steady_timer timer(co_await net::this_coro::executor);
  auto next = std::chrono::steady_clock::now();
  std::uint64_t answered = 0;
  for (;;) {
    const std::uint64_t asked = pod.pod->scrapes.load(std::memory_order_relaxed);
    if (asked != answered || std::chrono::steady_clock::now() >= next) {
      pod.publish(metrics.serialize(), asked);
      answered = asked;
      next = std::chrono::steady_clock::now() + every;
    }
    timer.expires_after(tick);
    error_code ec;
    co_await timer.async_wait(ec_out(ec));
    if (ec) co_return;
  }
}

// GET /metrics in a worker process of a pod: asks the others for fresh figures, waits for them
// (every `tick`, at most `patience`: a worker that is stopped or starting is taken as last
// published), and merges.

}  // namespace

result<tcp::endpoint> listen_endpoint(const std::string& listen) {
  auto hp = config::parse_host_port(listen);
  if (!hp) return std::move(hp).err();
  error_code ec;
  auto addr = net::ip::make_address(hp->host, ec);
  if (ec) return error::make(errc::bad_request, "listen: '" + hp->host + "' is not an IP address");
  return tcp::endpoint{addr, hp->port};
}

result<tcp::endpoint> gateway::start(int inherited_listener, int inherited_admin) {
  if (auto r = start_admin(inherited_admin); !r) return std::move(r).err();
  auto bound = bind_listeners(inherited_listener);
  if (!bound) return bound;
  runtime::raise_fd_limit();
  sample_memory();
  for (auto& w : threads_) w.server->start();
  if (admin_server_) admin_server_->start();
  start_pressure_and_pod_loops();
  start_jobs();
  monitor_ = std::make_unique<proxy::upstream_monitor>(pool_.context(0).get_executor(), *router_, opts_.upstream, tls_.get());
  monitor_->start(background_);
  if (mode_.shared_limits) start_redis();
  pool_.start();
  // The first requests should find Redis connected; a Redis that is not there in time is the
  // failure mode's to handle, like an outage later on.
  if (mode_.shared_limits && !redis_->wait_connected(redis_->on(0).config().connect_timeout))
    obs::log_warn("redis not connected at start: the shared limits follow the failure mode until it is",
                  {{"redis", redis_->on(0).config().server.to_string()},
                   {"failure_mode", redis::to_string(opts_.redis.on_failure)}});
  started_ = true;
  if (auto checked = check_eviction_policy(); !checked) {
    stop();
    return std::move(checked).err();
  }
  if (redis_worker_ && mode_.runs_jobs()) redis_worker_->start_pulling(job_slots_);
  return bound;
}

result<void> gateway::start_admin(int inherited_admin) {
  if (opts_.http.admin_listen.empty() && inherited_admin < 0) return ok;
  admin_opts_ = opts_.http;
  admin_opts_.max_connections = opts_.http.admin_max_connections;
  admin_handler_ = std::make_unique<admin_handler>(*threads_[0].dispatcher);
  admin_server_ = std::make_unique<http::server>(pool_.context(0), admin_opts_, *admin_handler_, admin_shared_);
  result<tcp::endpoint> at = tcp::endpoint{};
  if (inherited_admin >= 0) {
    at = admin_server_->adopt(inherited_admin);
  } else {
    auto ep = listen_endpoint(opts_.http.admin_listen);
    if (!ep) return std::move(ep).err();
    at = admin_server_->listen(*ep);
  }
  if (!at) return std::move(at).err();
  admin_endpoint_ = *at;
  return ok;
}

result<tcp::endpoint> gateway::bind_listeners(int inherited_listener) {
  tcp::endpoint bound;
  if (inherited_listener >= 0) {
    for (auto& w : threads_) {
      auto r = w.server->adopt(inherited_listener);
      if (!r) return std::move(r).err();
      bound = *r;
    }
    return bound;
  }
  auto ep = listen_endpoint(opts_.http.listen);
  if (!ep) return std::move(ep).err();
  for (auto& w : threads_) {
    auto r = w.server->listen(*ep);
    if (!r) return std::move(r).err();
    bound = *r;
    ep->port(bound.port());  // port 0: every other thread joins the port the first one got
  }
  return bound;
}

void gateway::start_pressure_and_pod_loops() {
  auto ex = pool_.context(0).get_executor();
  background_.spawn(ex,
                    admission::pressure_loop(*budget_, streams_, static_cast<std::size_t>(opts_.admission.max_resets_per_tick),
                                             opts_.admission.memory_sample_interval,
                                             [this](const admission::pressure_report& r) { log_pressure(r); }),
                    "memory pressure loop", true);
  if (mode_.pod_worker) {  // slots another worker process frees reach the requests waiting here
    background_.spawn(ex, admission::pod_regrant_loop(*admission_, pod_.pod->streams, std::chrono::milliseconds(5)),
                      "pod regrant loop", true);
    background_.spawn(ex, publish_loop(metrics_, pod_, std::chrono::seconds(1), std::chrono::milliseconds(5)),
                      "pod metrics publish loop", true);
  }
  if (mode_.pod_handover) {  // connections other workers hand to this one, spread over its threads
    std::vector<http::server*> servers;
    for (auto& w : threads_) servers.push_back(w.server.get());
    background_.spawn(ex, receive_handovers(pod_.mesh->inbox(pod_.row), std::move(servers)), "handover receive loop",
                      true);
  }
}

// The job slots for background jobs, spread over the threads (--queue redis: the pull loop
// starts each job on a thread); the retention sweep on thread 0.
void gateway::start_jobs() {
  if (mode_.redis_queue) {
    redis_worker_ = std::make_unique<proxy::redis_worker>(
        *queue_, *redis_, pool_, [this](std::size_t t) -> proxy::job_runner& { return threads_[t].dispatcher->jobs(); }, *jobs_metrics_,
        drain_, notifier_.get(), seal_ ? &*seal_ : nullptr);
    redis_worker_->start(job_slots_);
    services_->queue_worker = redis_worker_.get();
  } else {
    for (std::uint64_t i = 0; i < opts_.jobs.worker_max_jobs; ++i) {
      const std::size_t t = static_cast<std::size_t>(i % threads_.size());
      job_slots_.spawn(pool_.context(t).get_executor(), proxy::run_jobs(threads_[t].dispatcher->jobs(), *responses_, drain_.draining, jobs_metrics_.get()),
                      "job slot", true);
    }
  }
  background_.spawn(pool_.context(0).get_executor(),
                    jobs::retention_loop(*responses_, *jobs_metrics_,
                                         std::min<duration>(opts_.jobs.response_retention / 4, std::chrono::seconds(10))),
                    "response retention loop", true);
}

// --redis: the connections, the Pub/Sub subscriber and the lease renewals.
void gateway::start_redis() {
  redis_->start(redis_tasks_);
  if (notifier_) notifier_->start(redis_tasks_);
  redis_tasks_.spawn(pool_.context(0).get_executor(), leases_->run(redis_->on(0), 0, redis_tasks_), "lease renewal loop",
                     true);
}

void gateway::sample_memory() {
  log_pressure(admission::pressure_tick(*budget_, streams_, static_cast<std::size_t>(opts_.admission.max_resets_per_tick)));
}

void gateway::log_pressure(const admission::pressure_report& report) const {
  if (report.reset.empty()) return;
  obs::log_warn("memory saturated: resetting the streams holding the most buffered bytes",
                {{"rss_bytes", static_cast<std::uint64_t>(report.rss)},
                 {"budget_bytes", budget_->budget()},
                 {"streams_reset", static_cast<std::uint64_t>(report.reset.size())}});
}

void gateway::drain() {
  if (!started_ || stopped_) return;
  drain_.draining = true;  // /readyz fails; responses carry Connection: close
  obs::log_info("draining: readiness is failing", {{"drain_delay_ms", std::chrono::duration<double, std::milli>(opts_.drain_delay).count()}});
  std::this_thread::sleep_for(opts_.drain_delay);
  for (auto& w : threads_) w.server->stop_accepting();
  admission_->set_draining(true);  // queued requests are refused; running streams go on
  finish_streams();
}

void gateway::retire() {
  if (!started_ || stopped_) return;
  drain_.retiring = true;
  for (auto& w : threads_) w.server->stop_accepting_now();
  if (admin_server_) admin_server_->stop_accepting_now();
  obs::log_info("retiring: a reload started this worker's successor; it accepts no more, and finishes its streams",
                {{"streams", stream_metrics_->streams_active().value()}});
  finish_streams();
}

void gateway::finish_streams() {
  auto& active = stream_metrics_->streams_active();
  if (!active.wait_zero_until(std::chrono::steady_clock::now() + opts_.drain_timeout)) {
    obs::log_warn("drain timeout: ending the remaining streams in-band", {{"streams", active.value()}});
    drain_.cutting = true;  // each relay's watchdog tick ends its stream with an in-band error
    active.wait_zero_until(std::chrono::steady_clock::now() + std::chrono::seconds(2));
  }
  stop();
}

void gateway::stop() {
  if (stopped_) return;
  stopped_ = true;
  if (started_) {
    background_.cancel();  // the pressure loop, the retention sweep
    job_slots_.cancel();    // idle job slots; running jobs end with the pool below
    net::post(pool_.context(0), [this] {
      if (monitor_) monitor_->stop();
    });
    if (redis_) {
      redis_tasks_.cancel();  // the lease renewals
      redis_->stop();
    }
    for (auto& w : threads_) w.server->close_all();
    if (admin_server_) admin_server_->close_all();
    pool_.release();
    // Every session notices its closed socket at once; give them a moment to unwind cleanly.
    if (!pool_.wait_for(std::chrono::seconds(5))) pool_.stop();
    pool_.join();
  }
  // A permit that ends after this (its session's frame destroyed with the io_contexts) leaves its
  // slot to its lease.
  if (shared_keys_) shared_keys_->detach();
  if (budgets_) budgets_->client = nullptr;
  admin_server_.reset();
  threads_.clear();
  monitor_.reset();
  // The subscriber connection lives on thread 0's io_context: it goes before the pool does, started
  // or not (its timer's service is the io_context's).
  redis_worker_.reset();
  notifier_.reset();
}

}  // namespace sluice::app
