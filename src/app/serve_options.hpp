// Everything `sluice serve` can be told, grouped by the module that uses it. Built once from the
// config file and flags, then frozen and shared read-only.
#pragma once

#include <optional>
#include <string>

#include "admission/options.hpp"
#include "http/server_options.hpp"
#include "jobs/options.hpp"
#include "observability/log.hpp"
#include "observability/span_exporter.hpp"
#include "proxy/options.hpp"
#include "proxy/structured/structured_output.hpp"
#include "redis/options.hpp"
#include "routing/options.hpp"
#include "upstream/options.hpp"

namespace sluice::config {
class option_table;
}

namespace sluice::app {

struct serve_options {
  http::server_options http;
  upstream::options upstream;
  routing::options routing;  // several upstreams, retries, circuits, pacing, engine pressure
  proxy::options proxy;
  proxy::schema_options schema;  // structured outputs: schema-policy, schema-retries, schema-cache-*
  admission::options admission;
  redis::options redis;  // --redis: limits shared by every replica (docs/scale-out.md)
  jobs::options jobs;    // background responses and their stored events (docs/queue.md)
  obs::log_options log;
  obs::trace_options trace;  // traces: propagation, sampling, the OTLP exporter (docs/operations.md)
  duration drain_delay = std::chrono::seconds(5);     // SIGTERM: keep serving (readiness failing) this long
  duration drain_timeout = std::chrono::seconds(30);  // then let running streams finish for at most this long
  // Worker processes under a supervisor (docs/processes.md): "1" is one process and no supervisor,
  // "auto" one per core, else a count up to pod_state::max_processes.
  std::string processes = "1";
  // Not an option: the keys file's content as the supervisor read it for a generation of worker
  // processes, so that every worker of it (a replacement started later included) has the same keys
  // whatever happens to the file; a reload reads it again. Unset: the gateway reads keys-file.
  std::optional<std::string> keys_text;

  void register_options(config::option_table& t);
  // Cross-field checks after loading (e.g. buffers, URLs). Errors name the option.
  result<void> validate() const;
  // Folds `--upstream` flags into routing.upstreams (or the default one) and checks them; called
  // once by app::gateway. Idempotent.
  result<void> finish_routing();
  // `processes` as a number (auto: the cores), or why it is not one.
  result<std::size_t> process_count() const;
};

}  // namespace sluice::app
