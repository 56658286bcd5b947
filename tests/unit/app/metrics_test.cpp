#include "observability/metrics.hpp"

#include "app/gateway.hpp"
#include "app/pod.hpp"
#include "observability/exposition.hpp"
#include "jobs/metrics.hpp"

#include <gtest/gtest.h>
#include <prometheus/counter.h>
#include <prometheus/registry.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

// Moved from tests/unit/observability when the central gateway_metrics struct became one metrics
// struct per component (request, stream, admission, server, upstream, schema cache): the whole
// exposition now exists only where the composition root registers them all, so these tests build
// an app::gateway (not started) and read its registry.
namespace sluice::obs {
namespace {

// The gateway's whole exposition, as `sluice serve` registers it: upstreams by name (none: the
// default one), max-streams 256, a 512 MiB memory budget.
struct gateway_exposition {
  std::unique_ptr<app::gateway> gw;
  explicit gateway_exposition(std::vector<std::string> upstreams = {}) {
    app::serve_options o;
    for (auto& n : upstreams) {
      routing::upstream_spec s;
      s.name = n;
      s.url = "http://127.0.0.1:9";
      o.routing.upstreams.push_back(s);
    }
    o.admission.max_streams = 256;
    o.admission.memory_limit = 512ull * 1024 * 1024;
    o.http.threads = 1;
    auto made = app::gateway::make(o, "");
    EXPECT_TRUE(made.has_value()) << made.err().message;
    if (made) gw = std::move(made).value();
  }
  metrics_registry& reg() { return gw->metrics(); }
  proxy::request_metrics& req() { return gw->request_stats(); }
  proxy::stream_metrics& streams() { return gw->stream_stats(); }
  proxy::upstream_metrics& upstreams() { return gw->upstream_stats(); }
};


// One parsed sample line of the text format: name{k="v",...} value
struct sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

std::vector<sample> parse_samples(const std::string& text) {
  std::vector<sample> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    sample s;
    std::size_t i = line.find_first_of("{ ");
    s.name = line.substr(0, i);
    if (line[i] == '{') {
      ++i;
      while (line[i] != '}') {
        const auto eq = line.find('=', i);
        std::string key = line.substr(i, eq - i);
        std::size_t j = eq + 2;  // past ="
        std::string value;
        while (line[j] != '"') {
          if (line[j] == '\\') ++j;
          value += line[j++];
        }
        s.labels[key] = value;
        i = j + 1;
        if (line[i] == ',') ++i;
      }
      ++i;
    }
    s.value = std::stod(line.substr(i + 1));
    out.push_back(std::move(s));
  }
  return out;
}

const sample* find(const std::vector<sample>& all, const std::string& name,
                   const std::map<std::string, std::string>& labels) {
  for (const auto& s : all)
    if (s.name == name && s.labels == labels) return &s;
  return nullptr;
}

template <class E, std::size_t N>
std::set<std::string> names_of(const std::array<E, N>& all) {
  std::set<std::string> v;
  for (E e : all) v.emplace(to_string(e));
  return v;
}

std::set<std::string> foreground_results() {
  using m = sluice::jobs::metrics;
  std::set<std::string> v;
  for (std::size_t k = 0; k < m::foreground_outcome_count; ++k) v.emplace(m::name_of(static_cast<m::foreground_outcome>(k)));
  return v;
}

// Every metric the gateway promises, with its type.
const std::map<std::string, std::string> expected_families = {
    {"sluice_streams_active", "gauge"},
    {"sluice_stream_active_buffers", "gauge"},
    {"sluice_stream_buffered_bytes", "gauge"},
    {"sluice_stream_bytes_total", "counter"},
    {"sluice_max_streams", "gauge"},
    {"sluice_queue_depth", "gauge"},
    {"sluice_queue_lanes", "gauge"},
    {"sluice_queue_wait_seconds", "histogram"},
    {"sluice_rejections_total", "counter"},
    {"sluice_memory_budget_bytes", "gauge"},
    {"sluice_memory_used_bytes", "gauge"},
    {"sluice_connections_active", "gauge"},
    {"sluice_accept_share_pauses_total", "counter"},
    {"sluice_accept_share_overrides_total", "counter"},
    {"sluice_write_stalls_total", "counter"},
    {"sluice_requests_total", "counter"},
    {"sluice_request_duration_seconds", "histogram"},
    {"sluice_time_to_first_token_seconds", "histogram"},
    {"sluice_inter_token_seconds", "histogram"},
    {"sluice_overhead_seconds", "histogram"},
    {"sluice_tokens_total", "counter"},
    {"sluice_upstream_requests_total", "counter"},
    // Registered beside them by the upstream and schema-cache components (no longer a separate
    // collectable next to a central struct; every component is one now).
    {"sluice_upstream_circuit_state", "gauge"},
    {"sluice_upstream_circuit_opens_total", "counter"},
    {"sluice_upstream_outstanding_requests", "gauge"},
    {"sluice_upstream_healthy", "gauge"},
    {"sluice_upstream_engine_saturated", "gauge"},
    {"sluice_upstream_ratelimit_remaining", "gauge"},
    {"sluice_upstream_retries_total", "counter"},
    {"sluice_upstream_holds_total", "counter"},
    {"sluice_upstream_hold_seconds_total", "counter"},
    {"sluice_usage_chunks_stripped_total", "counter"},
    {"sluice_schema_cache_hits_total", "counter"},
    {"sluice_schema_cache_misses_total", "counter"},
    {"sluice_schema_cache_evictions_total", "counter"},
    {"sluice_schema_cache_expirations_total", "counter"},
    {"sluice_schema_cache_compile_errors_total", "counter"},
    {"sluice_schema_cache_compile_seconds_total", "counter"},
    {"sluice_schema_cache_entries", "gauge"},
    {"sluice_schema_cache_bytes", "gauge"},
    // Background responses (docs/queue.md).
    {"sluice_jobs_running", "gauge"},
    {"sluice_jobs_waiting", "gauge"},
    {"sluice_jobs_worker_slots", "gauge"},
    {"sluice_jobs_total", "counter"},
    {"sluice_jobs_refused_total", "counter"},
    {"sluice_responses_stored", "gauge"},
    {"sluice_response_store_bytes", "gauge"},
    {"sluice_responses_evicted_total", "counter"},
    {"sluice_responses_expired_total", "counter"},
    {"sluice_response_followers", "gauge"},
    {"sluice_recorded_streams_total", "counter"},
    {"sluice_jobs_claimed_total", "counter"},
    {"sluice_jobs_lost_total", "counter"},
    {"sluice_jobs_heartbeats_total", "counter"},
    {"sluice_jobs_orphaned_total", "counter"},
    {"sluice_foreground_jobs_total", "counter"},
    {"sluice_queue_redis_errors_total", "counter"},
    {"sluice_jobs_vanished_total", "counter"},
    {"process_cpu_seconds_total", "counter"},
    {"process_open_fds", "gauge"},
    {"process_max_fds", "gauge"},
    {"process_virtual_memory_bytes", "gauge"},
    {"process_resident_memory_bytes", "gauge"},
    {"process_start_time_seconds", "gauge"},
};

TEST(metrics_registry, serializes_every_family_with_help_and_type) {
  gateway_exposition e;
  const std::string text = e.reg().serialize();
  for (const auto& [name, type] : expected_families) {
    EXPECT_NE(text.find("# HELP " + name + " "), std::string::npos) << name;
    EXPECT_NE(text.find("# TYPE " + name + " " + type + "\n"), std::string::npos) << name;
  }
  // Nothing else sneaks in: every TYPE line names an expected family.
  std::istringstream in(text);
  std::string line;
  int types = 0;
  while (std::getline(in, line)) {
    if (!line.starts_with("# TYPE ")) continue;
    ++types;
    const std::string name = line.substr(7, line.find(' ', 7) - 7);
    EXPECT_TRUE(expected_families.contains(name)) << "unexpected family " << name;
  }
  EXPECT_EQ(types, static_cast<int>(expected_families.size()));
  EXPECT_EQ(metrics_registry::content_type, "text/plain; version=0.0.4; charset=utf-8");
}

// Every gauge a gateway can expose, in each mode that adds some (--redis, --queue redis,
// admin-listen, the pod's series under --processes), has a merge rule of its own
// (observability/exposition.cpp): without one the pod's merged /metrics would sum it, which is
// wrong for anything that is not each process's share. And the table lists nothing the gateway
// does not expose, so a renamed gauge cannot leave a stale row behind.
TEST(metrics_registry, every_gauge_has_a_merge_rule_for_the_pods_view) {
  app::serve_options o;
  o.redis.url = "redis://127.0.0.1:9";
  o.jobs.queue = jobs::queue_backend::redis;
  o.http.admin_listen = "127.0.0.1:0";
  o.http.threads = 1;
  auto made = app::gateway::make(o, "");
  ASSERT_TRUE(made.has_value()) << made.err().message;
  app::gateway& gw = **made;
  std::set<std::string> gauges;
  for (const auto& f : gw.metrics().collect())
    if (f.type == prometheus::MetricType::Gauge) gauges.insert(f.name);
  auto pod = std::make_unique<app::pod_state>();
  for (const auto& f : app::pod_metrics(*pod).Collect())
    if (f.type == prometheus::MetricType::Gauge) gauges.insert(f.name);
  for (const auto& name : {"sluice_shared_limits_degraded", "sluice_queue_jobs_waiting", "sluice_admin_connections_active",
                           "sluice_pod_streams_in_use", "sluice_redis_connected"})
    EXPECT_TRUE(gauges.contains(name)) << name << ": the modes above should expose it";
  for (const auto& name : gauges)
    EXPECT_TRUE(listed_gauge_rule(name).has_value()) << name << " has no merge rule in observability/exposition.cpp";
  for (const auto& g : gauge_rules())
    EXPECT_TRUE(gauges.contains(std::string(g.family))) << g.family << " is listed but no gateway exposes it";
}

TEST(metrics_registry, label_values_come_only_from_the_enums_and_config) {
  gateway_exposition e({"openai", "local-vllm"});
  auto& reg = e.reg();
  // Touch a few series so the test also covers values written at run time.
  e.req().requests_total(route::responses, outcome::timeout).Increment();
  e.upstreams().responded(1, 418);
  e.upstreams().responded(0, 0);
  e.req().overhead_seconds(stage::connect).observe(0.0004);

  std::set<std::string> statuses;
  for (int code : {200, 400, 401, 403, 404, 408, 409, 413, 422, 429, 500, 502, 503, 504, 201, 418, 599, 0, 302})
    statuses.emplace(upstream_status_label(code));
  // The upstream component's families label retries and holds by their own reasons, and budgets by
  // kind: bounded enums as well.
  auto reasons = names_of(all_reject_reasons);
  for (std::size_t k = 0; k < proxy::retry_reason_count; ++k)
    reasons.emplace(proxy::to_string(static_cast<proxy::retry_reason>(k)));
  for (std::size_t k = 0; k < proxy::hold_reason_count; ++k)
    reasons.emplace(proxy::to_string(static_cast<proxy::hold_reason>(k)));
  reasons.emplace("store_full");  // sluice_jobs_refused_total (queue_full is a reject reason already)
  auto outcomes = names_of(all_outcomes);
  outcomes.emplace("failed");  // sluice_jobs_heartbeats_total (ok, failed)
  const std::map<std::string, std::set<std::string>> allowed = {
      {"route", names_of(all_routes)}, {"outcome", outcomes},                  {"reason", reasons},
      {"stage", names_of(all_stages)}, {"upstream", {"openai", "local-vllm"}}, {"status", statuses},
      {"kind", {"requests", "tokens"}},
      {"state", {"completed", "failed", "cancelled", "incomplete"}},  // sluice_jobs_total
      {"op", {"create", "read", "cancel", "take", "append"}},         // sluice_queue_redis_errors_total
      {"result", foreground_results()},                                // sluice_foreground_jobs_total
      {"what", {"response", "job"}},                                   // sluice_jobs_vanished_total
  };
  const std::map<std::string, std::set<std::string>> direction_values = {
      {"sluice_tokens_total", names_of(all_directions)},
      {"sluice_stream_bytes_total", names_of(all_byte_directions)},
  };

  std::map<std::string, std::set<std::string>> label_keys_by_family;
  const auto samples = parse_samples(reg.serialize());
  ASSERT_FALSE(samples.empty());
  for (const auto& s : samples) {
    for (const auto& [k, v] : s.labels) {
      if (k == "le") continue;  // histogram bucket bounds, fixed per family
      if (k == "direction") {
        ASSERT_TRUE(direction_values.contains(s.name)) << s.name;
        EXPECT_TRUE(direction_values.at(s.name).contains(v)) << s.name << " direction=" << v;
        continue;
      }
      ASSERT_TRUE(allowed.contains(k)) << "unexpected label " << k << " on " << s.name;
      EXPECT_TRUE(allowed.at(k).contains(v)) << s.name << " " << k << "=" << v;
    }
  }
  // Every combination exists from the start (rate() needs the zero), and no more than that.
  std::size_t requests = 0, upstream = 0, overhead_buckets_seen = 0;
  for (const auto& s : samples) {
    if (s.name == "sluice_requests_total") ++requests;
    if (s.name == "sluice_upstream_requests_total") ++upstream;
    if (s.name == "sluice_overhead_seconds_bucket") ++overhead_buckets_seen;
  }
  EXPECT_EQ(requests, all_routes.size() * all_outcomes.size());
  EXPECT_EQ(upstream, 2 * upstream_status_slots);
  EXPECT_EQ(overhead_buckets_seen, all_stages.size() * (overhead_buckets.size() + 1));
}

TEST(metrics_registry, updates_show_up_in_the_exposition) {
  gateway_exposition e({"a", "b"});
  auto& reg = e.reg();
  e.req().requests_total(route::chat_completions, outcome::ok).Increment(3);
  e.req().rejected(reject_reason::queue_full);
  e.upstreams().responded(1, 503);
  e.upstreams().responded(1, 503);
  e.upstreams().responded(1, 0);
  e.upstreams().responded(0, 207);
  e.req().tokens_total(direction::completion).Increment(120);
  e.streams().stream_bytes_total(byte_direction::downstream).add(4096);
  // max-streams 256 and the 512 MiB budget are read from the admission component (config).
  e.streams().time_to_first_token_seconds().observe(0.3);
  e.req().request_duration_seconds(route::completions).observe(1.7);

  const auto s = parse_samples(reg.serialize());
  auto value = [&](const std::string& name, const std::map<std::string, std::string>& labels) {
    const sample* p = find(s, name, labels);
    EXPECT_NE(p, nullptr) << name;
    return p != nullptr ? p->value : -1.0;
  };
  EXPECT_EQ(value("sluice_requests_total", {{"route", "chat_completions"}, {"outcome", "ok"}}), 3);
  EXPECT_EQ(value("sluice_requests_total", {{"route", "chat_completions"}, {"outcome", "rejected"}}), 0);
  EXPECT_EQ(value("sluice_rejections_total", {{"reason", "queue_full"}}), 1);
  EXPECT_EQ(value("sluice_upstream_requests_total", {{"upstream", "b"}, {"status", "503"}}), 2);
  EXPECT_EQ(value("sluice_upstream_requests_total", {{"upstream", "b"}, {"status", "error"}}), 1);
  EXPECT_EQ(value("sluice_upstream_requests_total", {{"upstream", "a"}, {"status", "2xx"}}), 1);
  EXPECT_EQ(value("sluice_upstream_requests_total", {{"upstream", "a"}, {"status", "503"}}), 0);
  EXPECT_EQ(value("sluice_tokens_total", {{"direction", "completion"}}), 120);
  EXPECT_EQ(value("sluice_stream_bytes_total", {{"direction", "downstream"}}), 4096);
  EXPECT_EQ(value("sluice_max_streams", {}), 256);
  EXPECT_EQ(value("sluice_memory_budget_bytes", {}), 512.0 * 1024 * 1024);
  EXPECT_EQ(value("sluice_time_to_first_token_seconds_count", {}), 1);
  EXPECT_EQ(value("sluice_time_to_first_token_seconds_bucket", {{"le", "0.25"}}), 0);
  EXPECT_EQ(value("sluice_time_to_first_token_seconds_bucket", {{"le", "0.5"}}), 1);
  EXPECT_EQ(value("sluice_time_to_first_token_seconds_bucket", {{"le", "+Inf"}}), 1);
  EXPECT_EQ(value("sluice_request_duration_seconds_sum", {{"route", "completions"}}), 1.7);
  EXPECT_EQ(value("sluice_request_duration_seconds_count", {{"route", "models"}}), 0);
}

TEST(upstream_status, exact_codes_classes_and_transport_errors) {
  for (int code : exact_upstream_statuses) EXPECT_EQ(upstream_status_label(code), std::to_string(code));
  EXPECT_EQ(upstream_status_label(0), "error");
  EXPECT_EQ(upstream_status_label(201), "2xx");
  EXPECT_EQ(upstream_status_label(299), "2xx");
  EXPECT_EQ(upstream_status_label(418), "4xx");
  EXPECT_EQ(upstream_status_label(599), "5xx");
  EXPECT_EQ(upstream_status_label(501), "5xx");
  EXPECT_EQ(upstream_status_label(101), "other");
  EXPECT_EQ(upstream_status_label(302), "other");
  EXPECT_EQ(upstream_status_label(600), "other");
  EXPECT_EQ(upstream_status_label(-1), "other");
  EXPECT_EQ(upstream_status_label(99999), "other");
  // Distinct slots map to distinct labels.
  std::set<std::string_view> labels;
  for (int code = -5; code < 1000; ++code) labels.insert(upstream_status_label(code));
  EXPECT_EQ(labels.size(), upstream_status_slots);
}

TEST(gateway_metrics, rejects_bad_upstream_lists_and_indices) {
  // Upstream names are the router's, which config validation keeps unique and non-empty; an index
  // past them is ignored rather than counted somewhere else.
  app::serve_options dup;
  for (int i = 0; i < 2; ++i) {
    routing::upstream_spec s;
    s.name = "a";
    s.url = "http://127.0.0.1:9";
    dup.routing.upstreams.push_back(s);
  }
  EXPECT_FALSE(app::gateway::make(dup, "").has_value());
  gateway_exposition none;
  EXPECT_NO_THROW(none.upstreams().responded(0, 200));
  EXPECT_NO_THROW(none.upstreams().responded(1, 200));
  const auto s = parse_samples(none.reg().serialize());
  const sample* p = find(s, "sluice_upstream_requests_total", {{"upstream", "default"}, {"status", "200"}});
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->value, 1);
}

TEST(gateway_metrics, enum_names_are_the_label_values) {
  EXPECT_EQ(to_string(route::chat_completions), "chat_completions");
  EXPECT_EQ(to_string(route::other), "other");
  EXPECT_EQ(to_string(outcome::upstream_error), "upstream_error");
  EXPECT_EQ(to_string(reject_reason::max_connections), "max_connections");
  EXPECT_EQ(to_string(reject_reason::header_timeout), "header_timeout");
  EXPECT_EQ(to_string(stage::ratelimit), "ratelimit");
  EXPECT_EQ(to_string(direction::prompt), "prompt");
  EXPECT_EQ(to_string(byte_direction::upstream), "upstream");
  // All distinct within each enum.
  EXPECT_EQ(names_of(all_routes).size(), all_routes.size());
  EXPECT_EQ(names_of(all_outcomes).size(), all_outcomes.size());
  EXPECT_EQ(names_of(all_reject_reasons).size(), all_reject_reasons.size());
  EXPECT_EQ(names_of(all_stages).size(), all_stages.size());
}

TEST(gateway_metrics, hot_path_updates_from_many_threads_are_exact) {
  gateway_exposition e;
  auto& reg = e.reg();
  auto& g = e.req();
  auto& st = e.streams();
  constexpr int threads = 4, per_thread = 20000;
  std::atomic<bool> stop{false};
  // A scraper runs alongside, as in production.
  std::thread scraper([&] {
    while (!stop.load()) (void)reg.serialize();
  });
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&g, &st] {
      for (int i = 0; i < per_thread; ++i) {
        g.requests_total(route::chat_completions, outcome::ok).Increment();
        st.inter_token_seconds().observe(0.02);
        auto in_flight = st.streams_active().enter();
        st.stream_bytes_total(byte_direction::upstream).add(3);
      }
    });
  for (auto& th : pool) th.join();
  stop = true;
  scraper.join();
  EXPECT_EQ(g.requests_total(route::chat_completions, outcome::ok).Value(), threads * per_thread);
  EXPECT_EQ(st.inter_token_seconds().count(), static_cast<std::uint64_t>(threads * per_thread));
  EXPECT_EQ(st.streams_active().value(), 0u);
  EXPECT_EQ(st.stream_bytes_total(byte_direction::upstream).value(), 3u * threads * per_thread);
}

// A component's own metrics struct, as a later feature would write it.
struct cache_metrics final : prometheus::Collectable {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  prometheus::Counter& hits =
      prometheus::BuildCounter().Name("sluice_schema_cache_hits_total").Help("hits").Register(*registry).Add({});
  std::vector<prometheus::MetricFamily> Collect() const override { return registry->Collect(); }
};

TEST(metrics_registry, added_collectables_are_held_weakly) {
  metrics_registry reg;  // an empty registry: only what is added
  auto cache = std::make_shared<cache_metrics>();
  cache->hits.Increment(7);
  reg.add_collectable(cache);
  auto s = parse_samples(reg.serialize());
  const sample* p = find(s, "sluice_schema_cache_hits_total", {});
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->value, 7);
  cache.reset();  // the component is gone: its metrics leave, nothing dangles
  s = parse_samples(reg.serialize());
  EXPECT_EQ(find(s, "sluice_schema_cache_hits_total", {}), nullptr);
}

struct impostor final : prometheus::Collectable {
  std::vector<prometheus::MetricFamily> Collect() const override {
    prometheus::MetricFamily f;
    f.name = "sluice_queue_depth";
    f.help = "impostor";
    f.type = prometheus::MetricType::Gauge;
    prometheus::ClientMetric m;
    m.gauge.value = 999;
    f.metric.push_back(m);
    return {f};
  }
};

TEST(metrics_registry, a_reused_family_name_is_dropped_not_duplicated) {
  // The gateway's components register first; a later collectable reusing one of their names loses.
  gateway_exposition e;
  auto& reg = e.reg();
  auto bad = std::make_shared<impostor>();
  reg.add_collectable(bad);
  const std::string text = reg.serialize();
  EXPECT_EQ(text.find("impostor"), std::string::npos);
  const auto s = parse_samples(text);
  int n = 0;
  for (const auto& x : s)
    if (x.name == "sluice_queue_depth") {
      ++n;
      EXPECT_EQ(x.value, 0);  // the admission component's (nobody queued), not the impostor's 999
    }
  EXPECT_EQ(n, 1);
}

TEST(metrics_registry, callback_metrics_are_read_at_scrape_time) {
  metrics_registry reg;
  std::atomic<double> entries{5};
  ASSERT_TRUE(reg.add_callback_gauge("sluice_schema_cache_entries", "entries", [&] { return entries.load(); }));
  ASSERT_TRUE(reg.add_callback_counter("sluice_schema_cache_evictions_total", "evictions", [] { return 2.0; }));
  entries = 9;
  const auto s = parse_samples(reg.serialize());
  const sample* p = find(s, "sluice_schema_cache_entries", {});
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->value, 9);
  p = find(s, "sluice_schema_cache_evictions_total", {});
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->value, 2);
  EXPECT_NE(reg.serialize().find("# TYPE sluice_schema_cache_evictions_total counter"), std::string::npos);
}

TEST(metrics_registry, callback_metric_names_are_checked) {
  gateway_exposition e;  // the components' names are taken
  auto& reg = e.reg();
  auto one = [] { return 1.0; };
  EXPECT_FALSE(reg.add_callback_gauge("bad name", "h", one));
  EXPECT_FALSE(reg.add_callback_gauge("sluice_queue_depth", "taken by the gateway", one));
  EXPECT_FALSE(reg.add_callback_gauge("process_open_fds", "taken by the process collector", one));
  EXPECT_FALSE(reg.add_callback_counter("sluice_things", "counters end in _total", one));
  EXPECT_FALSE(reg.add_callback_gauge("sluice_things_total", "gauges do not", one));
  EXPECT_FALSE(reg.add_callback_gauge("sluice_no_reader", "h", {}));
  ASSERT_TRUE(reg.add_callback_gauge("sluice_things", "h", one));
  const auto dup = reg.add_callback_gauge("sluice_things", "h", one);
  ASSERT_FALSE(dup);
  EXPECT_NE(dup.err().message.find("sluice_things"), std::string::npos);
}

TEST(metrics_registry, passes_promtool_check_metrics) {
  const char* promtool = "/usr/bin/promtool";
  if (::access(promtool, X_OK) != 0) GTEST_SKIP() << "promtool not installed";
  gateway_exposition e({"openai", "vllm"});
  auto& reg = e.reg();
  e.req().requests_total(route::chat_completions, outcome::ok).Increment();
  e.gw->admission_stats().queue_wait_seconds().observe(0.01);
  e.req().overhead_seconds(stage::parse).observe(0.00002);
  ASSERT_TRUE(reg.add_callback_gauge("sluice_test_entries", "Things held.", [] { return 4.0; }));

  const auto dir = std::filesystem::temp_directory_path();
  const auto base = dir / ("sluice_metrics_" + std::to_string(::getpid()));
  const auto in = base.string() + ".prom", out = base.string() + ".out";
  { std::ofstream(in) << reg.serialize(); }
  const std::string cmd = std::string(promtool) + " check metrics < " + in + " > " + out + " 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream report(out);
  const std::string problems{std::istreambuf_iterator<char>(report), std::istreambuf_iterator<char>()};
  std::filesystem::remove(in);
  std::filesystem::remove(out);
  ASSERT_TRUE(WIFEXITED(rc));
  EXPECT_EQ(WEXITSTATUS(rc), 0) << problems;
  EXPECT_EQ(problems, "") << problems;
}

// A planted lint problem must make the same check fail, or the test above proves nothing.
TEST(metrics_registry, promtool_check_catches_a_bad_exposition) {
  const char* promtool = "/usr/bin/promtool";
  if (::access(promtool, X_OK) != 0) GTEST_SKIP() << "promtool not installed";
  metrics_registry reg;
  // Through a collectable: a counter without _total, which callback registration would refuse.
  struct bad_counter final : prometheus::Collectable {
    std::vector<prometheus::MetricFamily> Collect() const override {
      prometheus::MetricFamily f;
      f.name = "sluice_bad_counter";
      f.help = "no suffix";
      f.type = prometheus::MetricType::Counter;
      f.metric.emplace_back();
      return {f};
    }
  };
  auto bad = std::make_shared<bad_counter>();
  reg.add_collectable(bad);
  const auto in =
      (std::filesystem::temp_directory_path() / ("sluice_bad_" + std::to_string(::getpid()) + ".prom")).string();
  { std::ofstream(in) << reg.serialize(); }
  const int rc = std::system((std::string(promtool) + " check metrics < " + in + " > /dev/null 2>&1").c_str());
  std::filesystem::remove(in);
  ASSERT_TRUE(WIFEXITED(rc));
  EXPECT_NE(WEXITSTATUS(rc), 0);
}

}  // namespace
}  // namespace sluice::obs
