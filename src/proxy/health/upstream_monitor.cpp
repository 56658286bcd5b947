#include "proxy/health/upstream_monitor.hpp"

#include "observability/log.hpp"
#include "proxy/adapters/anthropic_upstream.hpp"
#include "proxy/adapters/azure_upstream.hpp"
#include "routing/engine_pressure.hpp"

namespace sluice::proxy {

namespace bhttp = boost::beast::http;

namespace {

constexpr duration scrape_limit = std::chrono::seconds(5);
constexpr std::size_t max_scrape_body = 4 * 1024 * 1024;

}  // namespace

upstream_monitor::upstream_monitor(net::any_io_executor ex, routing::router& r, const upstream::options& base,
                                   upstream::ssl::context* tls)
    : ex_(std::move(ex)), r_(r), opts_(base), tls_(tls) {
  opts_.pool_max_idle = 2;
  opts_.first_byte_timeout = std::min<duration>(opts_.first_byte_timeout, scrape_limit);
  opts_.idle_between_events = std::min<duration>(opts_.idle_between_events, scrape_limit);
  opts_.connect_timeout = std::min<duration>(opts_.connect_timeout, scrape_limit);
  opts_.tls_timeout = std::min<duration>(opts_.tls_timeout, scrape_limit);
}

upstream_monitor::~upstream_monitor() = default;

void upstream_monitor::start(runtime::task_group& tasks) {
  for (std::size_t i = 0; i < r_.size(); ++i) {
    const auto& u = r_.at(i);
    if (u.spec.probe) {
      auto st = std::make_unique<loop_state>();
      st->client = std::make_unique<upstream::client>(ex_, opts_, u.target, tls_);
      auto path = upstream_target(u, "/v1/models", "");
      st->path = path ? std::move(*path) : u.target.base_path + "/v1/models";
      st->timer = std::make_unique<net::steady_timer>(ex_);
      tasks.spawn(ex_, probe_loop(i, st.get()), "upstream probe loop");
      loops_.push_back(std::move(st));
    }
    if (!u.spec.engine_metrics.empty()) {
      auto target = upstream::parse_url(u.spec.engine_metrics);
      if (!target) continue;  // validated at start-up
      auto st = std::make_unique<loop_state>();
      st->path = target->base_path.empty() ? "/metrics" : target->base_path;
      st->client = std::make_unique<upstream::client>(ex_, opts_, *target, tls_);
      st->timer = std::make_unique<net::steady_timer>(ex_);
      tasks.spawn(ex_, engine_loop(i, st.get()), "engine scrape loop");
      loops_.push_back(std::move(st));
    }
  }
}

void upstream_monitor::stop() {
  stopping_ = true;
  for (auto& l : loops_) {
    l->timer->cancel();
    if (l->in_flight) l->in_flight->abort();
  }
}

task<bool> upstream_monitor::sleep(loop_state& st, duration d) {
  if (stopping_) co_return false;
  st.timer->expires_after(d);
  error_code ec;
  co_await st.timer->async_wait(ec_out(ec));
  co_return !stopping_;
}

task<result<std::string>> upstream_monitor::fetch(upstream::client& c, std::string path,
                                                  const routing::upstream_state* u, upstream::abort_handle& abort,
                                                  duration limit) {
  upstream::request req{bhttp::verb::get, path, 11};
  // The probe's credential, in the upstream's own style (an engine scrape sends none).
  if (u && u->spec.dialect == routing::upstream_dialect::anthropic) set_anthropic_credentials(req, *u, u->authorization);
  else if (u && !u->authorization.empty() && u->spec.key_style() == routing::key_header::api_key)
    req.set("api-key", u->authorization.substr(u->authorization.find(' ') + 1));  // "Bearer KEY" -> KEY
  else if (u && !u->authorization.empty()) req.set(bhttp::field::authorization, u->authorization);
  req.set(bhttp::field::accept, "*/*");
  auto sent = co_await c.send(req, abort, limit);
  if (!sent) co_return std::move(sent).err();
  auto& up = **sent;
  const unsigned status = up.status();
  auto body = co_await up.read_all(max_scrape_body);
  if (!body) co_return std::move(body).err();
  if (status / 100 != 2) {
    error e = error::make(errc::upstream_status, "answered HTTP " + std::to_string(status));
    e.upstream_status = static_cast<int>(status);
    co_return e;
  }
  co_return std::move(*body);
}

task<void> upstream_monitor::probe_loop(std::size_t i, loop_state* st) {
  auto& u = r_.at(i);
  const auto interval = r_.settings().probe_interval;
  while (!stopping_) {
    upstream::abort_handle abort;
    st->in_flight = &abort;
    auto got = co_await fetch(*st->client, st->path, &u, abort, scrape_limit);
    st->in_flight = nullptr;
    if (stopping_) break;
    const bool ok_now = got.has_value();
    const bool was_ok = u.probe_ok.exchange(ok_now);
    if (ok_now != was_ok) {
      if (ok_now) obs::log_info("upstream probe recovered", {{"upstream", std::string_view(u.spec.name)}});
      else obs::log_warn("upstream probe failed: no traffic until it answers again",
                         {{"upstream", std::string_view(u.spec.name)}, {"error", std::string_view(got.err().message)}});
    }
    bool more = co_await sleep(*st, interval);
    if (!more) break;
  }
}

task<void> upstream_monitor::engine_loop(std::size_t i, loop_state* st) {
  auto& u = r_.at(i);
  const auto& ro = r_.settings();
  const routing::engine_limits limits{ro.engine_max_waiting, ro.engine_max_kv_cache, ro.engine_max_deferred};
  std::string last_reason;
  bool failing = false;
  while (!stopping_) {
    upstream::abort_handle abort;
    st->in_flight = &abort;
    auto got = co_await fetch(*st->client, st->path, nullptr, abort, scrape_limit);
    st->in_flight = nullptr;
    if (stopping_) break;
    if (got) {
      failing = false;
      auto sample = routing::parse_engine_metrics(*got);
      std::string reason = routing::saturation_reason(sample, limits);
      r_.set_engine(i, !reason.empty(), std::chrono::steady_clock::now());
      if (reason != last_reason) {
        if (reason.empty()) obs::log_info("engine recovered: requests flow again", {{"upstream", std::string_view(u.spec.name)}});
        else obs::log_warn("engine saturated: holding requests at the gateway",
                           {{"upstream", std::string_view(u.spec.name)}, {"reason", std::string_view(reason)}});
        last_reason = reason;
      }
    } else if (!failing) {
      // The last verdict goes stale after engine-stale-after and stops holding requests.
      failing = true;
      obs::log_warn("engine metrics scrape failed", {{"upstream", std::string_view(u.spec.name)},
                                                    {"error", std::string_view(got.err().message)}});
    }
    bool more = co_await sleep(*st, ro.engine_scrape_interval);
    if (!more) break;
  }
}

}  // namespace sluice::proxy
