#include "app/serve_options.hpp"

#include <algorithm>
#include <charconv>

#include "app/pod.hpp"
#include "config/option_table.hpp"
#include "runtime/loop_pool.hpp"
#include "upstream/url.hpp"

namespace sluice::app {

void serve_options::register_options(config::option_table& t) {
  http.register_options(t);
  upstream.register_options(t);
  routing.register_options(t);
  proxy.register_options(t);
  schema.register_options(t);
  admission.register_options(t);
  redis.register_options(t);
  jobs.register_options(t);
  log.register_options(t);
  trace.register_options(t);
  t.add_duration("drain-delay", "on SIGTERM: keep serving with readiness failing for this long", drain_delay)
      .add_duration("drain-timeout", "then let running streams finish for at most this long", drain_timeout)
      .add("processes", "worker processes under a supervisor, all on the listen address (auto = one per core)",
           processes);
}

result<void> serve_options::validate() const {
  {
    serve_options copy = *this;
    if (auto r = copy.finish_routing(); !r) return std::move(r).err();
  }
  if (auto a = config::parse_host_port(http.listen); !a) return std::move(a).err();
  if (!http.admin_listen.empty()) {
    auto a = config::parse_host_port(http.admin_listen);
    if (!a) return error::make(errc::bad_request, "admin-listen: " + a.err().message);
    if (http.admin_listen == http.listen && a->port != 0)  // port 0: each gets a free port of its own
      return error::make(errc::bad_request, "admin-listen must differ from listen");
  }
  if (http.admin_max_connections < 1) return error::make(errc::bad_request, "admin-max-connections must be at least 1");
  if (auto n = process_count(); !n) return std::move(n).err();
  if (proxy.stream_buffer < 1024) return error::make(errc::bad_request, "stream-buffer must be at least 1KiB");
  if (auto r = proxy.finish(); !r) return std::move(r).err();
  if (http.max_header_bytes < 1024) return error::make(errc::bad_request, "max-header-bytes must be at least 1KiB");
  if (http.max_request_line_bytes < 256)
    return error::make(errc::bad_request, "max-request-line-bytes must be at least 256B");
  if (http.max_header_fields < 8) return error::make(errc::bad_request, "max-header-fields must be at least 8");
  if (auto r = admission.validate(); !r) return std::move(r).err();
  if (auto r = jobs.validate(); !r) return std::move(r).err();
  if (auto r = schema.validate(); !r) return std::move(r).err();
  if (auto r = trace.validate(); !r) return std::move(r).err();
  if (redis.enabled()) {
    if (auto r = redis.resolve(); !r) return std::move(r).err();
  }
  if (jobs.queue == jobs::queue_backend::redis && !redis.enabled())
    return error::make(errc::bad_request, "queue redis needs --redis (the Redis that holds the jobs and responses)");
  return ok;
}

result<std::size_t> serve_options::process_count() const {
  if (processes == "auto") return std::min(runtime::default_threads(), pod_state::max_processes);
  std::size_t n = 0;
  const auto [end, ec] = std::from_chars(processes.data(), processes.data() + processes.size(), n);
  if (ec != std::errc() || end != processes.data() + processes.size() || n < 1 || n > pod_state::max_processes)
    return error::make(errc::bad_request, "processes: '" + processes + "' is not auto or a count from 1 to " +
                                              std::to_string(pod_state::max_processes));
  return n;
}

result<void> serve_options::finish_routing() {
  std::vector<std::string> flag_urls = std::move(upstream.urls);
  upstream.urls.clear();
  if (flag_urls.empty() && routing.upstreams.empty()) flag_urls.emplace_back(upstream::options::default_url);
  return routing.finish(flag_urls, upstream.key_env);
}

}  // namespace sluice::app
