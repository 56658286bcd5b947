// app::gateway, assembled (gateway.hpp): the deployment decided once, then named steps that build the
// router, admission, client-key limits, services, responses, metrics and workers, each returning the
// error it finds (ADR 0018). Running it is gateway_run.cpp's.
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
std::size_t thread_count(const serve_options& o) {
  return o.http.threads == 0 ? runtime::default_threads() : static_cast<std::size_t>(o.http.threads);
}

// Each upstream's Authorization header value; the key of the default key variable is given, the
// others are read from their own variables here. Never logged.
std::vector<std::string> authorizations(const serve_options& o, const std::string& default_key) {
  std::vector<std::string> out;
  for (const auto& u : o.routing.upstreams) {
    std::string key;
    if (u.key_env == o.upstream.key_env) {
      key = default_key;
    } else if (const char* v = std::getenv(u.key_env.c_str())) {
      key = v;
    }
    out.push_back(key.empty() ? std::string() : "Bearer " + key);
  }
  return out;
}

task<std::string> fresh_pod_exposition(pod_link pod, std::string own, duration tick, duration patience) {
  const std::uint64_t scrape = pod.ask_fresh();
  pod.publish(own, scrape);
  net::steady_timer timer(co_await net::this_coro::executor);
  const auto give_up = std::chrono::steady_clock::now() + patience;
  while (!pod.all_published(scrape) && std::chrono::steady_clock::now() < give_up) {
    timer.expires_after(tick);
    error_code ec;
    co_await timer.async_wait(ec_out(ec));
    if (ec) break;
  }
  co_return pod.pod_exposition(own);
}
}  // namespace

namespace {
void report_bug(std::string_view group, std::string_view task, std::string_view what) {
  obs::log_error("bug: a coroutine let an exception escape", {{"group", group}, {"task", task}, {"error", what}});
}
}  // namespace

result<std::unique_ptr<gateway>> gateway::make(serve_options opts, std::string upstream_key,
                                               admission::memory_budget::rss_source rss_source, pod_link pod) {
  if (auto r = opts.finish_routing(); !r) return std::move(r).err();
  const deployment mode = deployment::of(opts, pod);
  std::unique_ptr<gateway> gw(new gateway(std::move(opts), pod, mode));
  if (auto r = gw->assemble(upstream_key, std::move(rss_source)); !r) return std::move(r).err();
  return gw;
}

gateway::gateway(serve_options opts, pod_link pod, deployment mode)
    : opts_(std::move(opts)),
      pod_(pod),
      mode_(mode),
      redis_tasks_("redis", report_bug),
      job_slots_("job slots", report_bug),
      background_("gateway background", report_bug),
      pool_(thread_count(opts_)) {}

result<void> gateway::assemble(const std::string& upstream_key, admission::memory_budget::rss_source rss_source) {
  if (auto r = build_router(upstream_key); !r) return r;
  build_admission(std::move(rss_source));
  if (auto r = build_key_limits(); !r) return r;
  build_services();
  build_responses();
  if (auto r = register_metrics(); !r) return r;
  build_workers();
  return ok;
}

result<void> gateway::build_router(const std::string& upstream_key) {
  routing::budget_factory budgets;  // default: each upstream's own local pacer
  if (mode_.shared_limits) {
    if (auto r = prepare_shared_limits(); !r) return r;
    budgets = [ctx = budgets_.get()](const routing::upstream_spec& s,
                                     routing::time_point now) -> result<std::unique_ptr<routing::rate_budget>> {
      return std::unique_ptr<routing::rate_budget>(std::make_unique<routing::shared_budget>(s, now, *ctx));
    };
  } else if (mode_.pod_worker) {  // a worker of --processes N: each upstream's budget is the pod's
    budgets = [pod = pod_](const routing::upstream_spec& s,
                           routing::time_point now) -> result<std::unique_ptr<routing::rate_budget>> {
      auto b = routing::pod_budget::attach(s, now, pod.pod->budgets, pod.row, pod.pod->workers[pod.row].generation.load());
      if (!b) return std::move(b).err();
      return std::unique_ptr<routing::rate_budget>(std::move(*b));
    };
  }
  // A worker of --processes N shares its upstreams' circuits with the pod's other workers (with
  // --redis too: the fleet shares no circuit, the pod does).
  routing::circuit_place circuits;
  if (mode_.pod_worker) circuits = {&pod_.pod->circuits, pod_.row, pod_.pod->workers[pod_.row].generation.load()};
  auto made = routing::router::make(opts_.routing, authorizations(opts_, upstream_key), std::chrono::steady_clock::now(),
                                    std::move(budgets), circuits);
  if (!made) return std::move(made).err();
  router_ = std::move(*made);
  bool any_tls = false;
  for (std::size_t i = 0; i < router_->size(); ++i) any_tls = any_tls || router_->at(i).target.tls;
  for (const auto& u : opts_.routing.upstreams) any_tls = any_tls || u.engine_metrics.rfind("https://", 0) == 0;
  if (any_tls) tls_ = upstream::make_tls_context();
  return ok;
}

void gateway::build_admission(admission::memory_budget::rss_source rss_source) {
  // A worker of --processes N holds the pod's memory (the sum of the workers' RSS) to the budget,
  // which is the pod's (the cgroup limit), so every worker sheds and resets on the same reading.
  if (!rss_source && mode_.pod_worker) rss_source = [pod = pod_] { return pod.sample_rss(); };
  budget_ = std::make_unique<admission::memory_budget>(opts_.admission, std::move(rss_source));
  std::unique_ptr<admission::slot_ledger> slots;  // null: this process's own (local_slots)
  if (mode_.pod_worker) slots = std::make_unique<admission::pod_slot_row>(pod_.pod->streams, pod_.row);
  admission_ = std::make_unique<admission::controller>(opts_.admission, *budget_, admission::controller::now_fn{},
                                                       std::move(slots));
}

result<void> gateway::build_key_limits() {
  if (mode_.keys != key_limits_place::none) {
    auto k = opts_.keys_text ? admission::client_keys::parse(*opts_.keys_text)
                             : admission::client_keys::load_file(opts_.admission.keys_file);
    if (!k) return std::move(k).err();
    keys_.emplace(std::move(*k));
  }
  if (mode_.shared_limits) return build_shared_limits();
  if (mode_.keys == key_limits_place::pod) {
    auto made = admission::pod_key_limits::attach(std::move(*keys_), pod_.pod->keys, pod_.row,
                                                  pod_.pod->workers[pod_.row].generation.load());
    if (!made) return std::move(made).err();
    pod_keys_ = std::make_unique<admission::pod_key_limits>(std::move(*made));
    keys_.reset();
  }
  return ok;
}

admission::key_limits* gateway::key_limits() noexcept {
  switch (mode_.keys) {
    case key_limits_place::none:
      return nullptr;
    case key_limits_place::local:
      return keys_ ? &*keys_ : nullptr;
    case key_limits_place::pod:
      return pod_keys_.get();
    case key_limits_place::shared:
      return shared_keys_.get();
  }
  return nullptr;
}

void gateway::build_services() {
  if (mode_.pod_worker) {
    // Spread the pod's connections: a worker over its share stops accepting (ADR 0016).
    server_shared_.pod_connections = &pod_.pod->workers[pod_.row].connections;
    server_shared_.over_share = [pod = pod_, slack = opts_.http.accept_share_slack] { return pod.over_share(slack); };
  }
  request_metrics_ = std::make_shared<proxy::request_metrics>(&server_shared_);
  stream_metrics_ = std::make_shared<proxy::stream_metrics>();
  upstream_metrics_ = std::make_shared<proxy::upstream_metrics>(*router_);
  admission_metrics_ = std::make_shared<admission::admission_metrics>(*admission_, *budget_);
  server_metrics_ = std::make_shared<http::server_metrics>(server_shared_);
  std::vector<std::string> upstream_keys;
  for (std::size_t i = 0; i < router_->size(); ++i)
    if (!router_->at(i).authorization.empty())
      upstream_keys.push_back(proxy::key_of_authorization(router_->at(i).authorization));
  secrets_ = proxy::secret_scrubber(upstream_keys);
  services_ = std::make_unique<proxy::services>(proxy::services{metrics_, *request_metrics_, *stream_metrics_,
                                                                *upstream_metrics_, *admission_, *budget_, streams_,
                                                                key_limits(), opts_.admission, drain_, secrets_});
  services_->tracing = &opts_.trace;
  if (opts_.trace.exporting()) {
    obs::otlp_resource resource{opts_.trace.service_name, SLUICE_VERSION, obs::service_instance_id()};
    spans_ = std::make_unique<obs::span_exporter>(opts_.trace, std::move(resource));
    services_->spans = spans_.get();
  }
}

void gateway::build_responses() {
  responses_ = std::make_unique<jobs::memory_store>(opts_.jobs);
  jobs_metrics_ = std::make_shared<jobs::metrics>(*responses_);
  if (mode_.pod_worker)
    services_->pod_metrics = [pod = pod_](std::string own) {
      return fresh_pod_exposition(pod, std::move(own), std::chrono::milliseconds(2), std::chrono::milliseconds(100));
    };
  services_->responses = responses_.get();
  // A worker of --processes N with the in-process store: its responses are indexed for the pod,
  // and a request for one another worker holds goes to that worker (docs/processes.md).
  if (mode_.pod_handover) {
    handover_ = std::make_unique<pod_handover>(pod_);
    responses_->set_index([h = handover_.get()](std::string_view id, bool stored) { h->indexed(id, stored); });
    services_->handover = handover_.get();
  }
  services_->jobs = jobs_metrics_.get();
  services_->queue = queue_.get();
  services_->notifier = notifier_.get();
  services_->redis = mode_.redis_queue ? redis_.get() : nullptr;
  services_->seal = seal_ ? &*seal_ : nullptr;
  shared_ = std::make_unique<proxy::shared_config>(
      proxy::shared_config{opts_.proxy, opts_.upstream, *router_, *services_});
  // Structured outputs: one compiled-schema cache for every thread, visible on /metrics.
  schemas_ = std::make_unique<schema::schema_cache>(opts_.schema.cache_options());
  shared_->schema = &opts_.schema;
  shared_->jobs = &opts_.jobs;
  shared_->schemas = schemas_.get();
}

void gateway::build_workers() {
  for (std::size_t i = 0; i < pool_.size(); ++i) {
    auto& ctx = pool_.context(i);
    thread_parts w;
    w.dispatcher = std::make_unique<proxy::dispatcher>(ctx.get_executor(), *shared_, tls_.get());
    w.server = std::make_unique<http::server>(ctx, opts_.http, *w.dispatcher, server_shared_);
    w.dispatcher->set_watchdog(&w.server->watchdog());
    threads_.push_back(std::move(w));
  }
}

result<void> gateway::prepare_shared_limits() {
  auto settings = opts_.redis.resolve();
  if (!settings) return std::move(settings).err();
  redis_health_ = std::make_unique<redis::availability>(opts_.redis.on_failure, settings->server.to_string());
  leases_ = std::make_unique<redis::lease_keeper>(redis::lease_keeper::random_replica_name(), opts_.redis.lease);
  budgets_ = std::make_unique<routing::shared_budget_context>(opts_.redis, *redis_health_, *leases_);
  return ok;
}

result<void> gateway::build_shared_limits() {
  auto settings = opts_.redis.resolve();
  if (!settings) return std::move(settings).err();
  std::vector<redis::script> scripts{redis::lease_keeper::renew_script()};  // index 0
  const std::size_t budget_scripts = scripts.size();
  for (auto& sc : routing::shared_budget_context::scripts()) scripts.push_back(std::move(sc));
  const std::size_t key_scripts = scripts.size();
  if (mode_.keys == key_limits_place::shared) {
    shared_keys_ = std::make_unique<admission::shared_key_limits>(std::move(*keys_), opts_.redis, *redis_health_, *leases_);
    keys_.reset();
    for (auto& sc : admission::shared_key_limits::scripts()) scripts.push_back(std::move(sc));
  }
  const std::size_t queue_scripts = scripts.size();
  if (mode_.redis_queue)
    for (auto& sc : jobs::redis_queue::scripts()) scripts.push_back(std::move(sc));
  if (settings->server.tls && !tls_) tls_ = upstream::make_tls_context();
  redis_ = std::make_unique<redis::client>(pool_, std::move(*settings), std::move(scripts), tls_.get());
  if (mode_.redis_queue)
    if (auto r = build_redis_queue(queue_scripts); !r) return r;
  budgets_->attach(*redis_, budget_scripts);
  if (shared_keys_) shared_keys_->attach(*redis_, key_scripts);
  shared_metrics_ = std::make_shared<redis::shared_metrics>(*redis_health_, *leases_);
  obs::log_info("limits shared through redis",
                {{"redis", redis_->on(0).config().server.to_string()},
                 {"replica", leases_->replica()},
                 {"failure_mode", redis::to_string(opts_.redis.on_failure)},
                 {"client_keys", shared_keys_ ? shared_keys_->keys().size() : std::size_t{0}}});
  return ok;
}

result<void> gateway::build_redis_queue(std::size_t first_script) {
  // The worker's consumer name is the replica's: unique per process start.
  queue_ = std::make_unique<jobs::redis_queue>(opts_.redis.key_prefix, leases_->replica(), opts_.jobs,
                                               std::chrono::duration_cast<std::chrono::milliseconds>(opts_.redis.lease),
                                               opts_.admission.queue_depth);
  queue_->attach(first_script);
  if (auto r = load_queue_secret(); !r) return r;
  std::vector<std::string> channels{queue_->notify_channel(queue_->worker())};
  if (mode_.runs_jobs()) channels.push_back(queue_->jobs_channel());
  notifier_ = std::make_unique<jobs::redis_notifier>(redis_->add_subscriber(0), std::move(channels));
  obs::log_info("jobs queued through redis", {{"role", jobs::to_string(opts_.jobs.role)},
                                              {"worker", leases_->replica()},
                                              {"worker_max_jobs", opts_.jobs.worker_max_jobs}});
  return ok;
}

result<void> gateway::load_queue_secret() {
  const char* secret = std::getenv(opts_.jobs.queue_secret_env.c_str());
  if (!secret || !*secret) {
    obs::log_info("no queue secret: background jobs that would carry a client's own upstream key are refused",
                  {{"queue_secret_env", std::string_view(opts_.jobs.queue_secret_env)}});
    return ok;
  }
  auto made = jobs::credential_seal::from_secret(secret);
  if (!made) {
    error e = std::move(made).err();
    e.message = opts_.jobs.queue_secret_env + ": " + e.message;
    return e;
  }
  seal_.emplace(*made);
  return ok;
}

result<void> gateway::check_eviction_policy() {
  if (!mode_.redis_queue) return ok;
  // One command on thread 0's connection, waited for here: nothing has been answered yet.
  auto& c = redis_->on(0);
  auto got = net::co_spawn(pool_.context(0), jobs::read_eviction_policy(c, opts_.jobs.command_timeout), net::use_future);
  if (got.wait_for(opts_.jobs.command_timeout + std::chrono::seconds(1)) != std::future_status::ready) {
    obs::log_warn("could not check redis's maxmemory-policy at start (no answer)", {});
    return ok;
  }
  const auto policy = got.get();
  if (!policy.known) {
    obs::log_warn("could not check redis's maxmemory-policy at start (CONFIG GET refused): make sure it is noeviction",
                  {{"reason", std::string_view(policy.policy)}});
    return ok;
  }
  if (policy.safe()) return ok;
  const std::string why = "redis maxmemory-policy is " + policy.policy +
                          ": Redis may evict stored responses and queued jobs before their time; set it to noeviction";
  if (opts_.jobs.redis_eviction_check == jobs::eviction_check::refuse)
    return error::make(errc::bad_request, why + " (redis-eviction-check: refuse)");
  obs::log_warn("redis may evict stored responses and queued jobs: set maxmemory-policy noeviction",
                {{"maxmemory_policy", std::string_view(policy.policy)}});
  return ok;
}

result<void> gateway::register_metrics() {
  for (std::shared_ptr<const prometheus::Collectable> c :
       std::initializer_list<std::shared_ptr<const prometheus::Collectable>>{
           request_metrics_, stream_metrics_, upstream_metrics_, admission_metrics_, server_metrics_, jobs_metrics_})
    metrics_.add_collectable(c);
  if (spans_) metrics_.add_collectable(spans_->metrics());
  if (mode_.pod_worker) {
    pod_metrics_ = std::make_shared<pod_metrics>(*pod_.pod);
    metrics_.add_collectable(pod_metrics_);
  }
  if (mode_.shared_limits) {
    metrics_.add_collectable(redis_->metrics_collectable());
    metrics_.add_collectable(shared_metrics_);
  }
  if (auto r = proxy::register_schema_cache_metrics(metrics_, *schemas_); !r) return r;
  if (!opts_.http.admin_listen.empty()) {  // admin-listen's own connection cap
    const http::server_shared* a = &admin_shared_;
    auto g = metrics_.add_callback_gauge("sluice_admin_connections_active", "Open connections on admin-listen.",
                                         [a] { return static_cast<double>(a->open_connections.load()); });
    auto c = metrics_.add_callback_counter("sluice_admin_connections_refused_total",
                                           "Connections on admin-listen closed at once: admin-max-connections were open.",
                                           [a] { return static_cast<double>(a->refused_connections.load()); });
    if (!g || !c) return error::make(errc::internal, "admin-listen metrics could not be registered");
  }
  return ok;
}

gateway::~gateway() { stop(); }

}  // namespace sluice::app
