// upstream_monitor: the background side of upstream health, on one worker thread. For upstreams
// with `probe: true` it GETs /v1/models every probe-interval and marks the upstream unusable while
// that fails; for upstreams with `engine-metrics` it scrapes the engine's Prometheus endpoint every
// engine-scrape-interval and tells the router whether the engine is saturated (requests for it are
// then held at the gateway until it recovers). start() and stop() run on the monitor's executor's
// thread (stop() may also be posted there); every loop ends promptly after stop().
#pragma once

#include <memory>
#include <vector>

#include "routing/router.hpp"
#include "runtime/asio.hpp"
#include "runtime/task_group.hpp"
#include "upstream/client.hpp"

namespace sluice::proxy {

class upstream_monitor {
 public:
  upstream_monitor(net::any_io_executor ex, routing::router& r, const upstream::options& base,
                   upstream::ssl::context* tls);
  ~upstream_monitor();
  upstream_monitor(const upstream_monitor&) = delete;
  upstream_monitor& operator=(const upstream_monitor&) = delete;

  // Spawns the loops into `tasks` (which reports a loop that fails); stop() ends them.
  void start(runtime::task_group& tasks);
  void stop();

  // One GET of `path` on `c`; the body when the answer is 2xx (bounded), else an error. Public for tests.
  static task<result<std::string>> fetch(upstream::client& c, std::string path, const routing::upstream_state* u,
                                         upstream::abort_handle& abort, duration limit);

 private:
  struct loop_state {
    std::unique_ptr<upstream::client> client;
    std::string path;
    std::unique_ptr<net::steady_timer> timer;
    upstream::abort_handle* in_flight = nullptr;
  };
  task<void> probe_loop(std::size_t upstream, loop_state* st);
  task<void> engine_loop(std::size_t upstream, loop_state* st);
  task<bool> sleep(loop_state& st, duration d);

  net::any_io_executor ex_;
  routing::router& r_;
  upstream::options opts_;  // the base options with short timeouts for probes and scrapes
  upstream::ssl::context* tls_;
  std::vector<std::unique_ptr<loop_state>> loops_;
  bool stopping_ = false;
};

}  // namespace sluice::proxy
