#include "app/pod_process.hpp"

#include <signal.h>
#include <unistd.h>

#include <boost/asio/signal_set.hpp>
#include <cstdlib>
#include <memory>

#include "app/gateway.hpp"
#include "observability/log.hpp"
#include "runtime/unique_fd.hpp"

namespace sluice::app {

int run_pod_process(const serve_options& opts, int listener, int admin, pod_link pod, int ready_fd) {
  runtime::unique_fd listening(listener), admin_listening(admin), ready_pipe(ready_fd);
  const std::int64_t pid = ::getpid();
  // SIGHUP is the supervisor's (a reload); a worker that got one from a stray `kill` ignores it.
  ::signal(SIGHUP, SIG_IGN);
  const char* key = std::getenv(opts.upstream.key_env.c_str());
  auto made = gateway::make(opts, key ? key : "", admission::memory_budget::rss_source{}, pod);
  if (!made) {
    obs::log_error("worker process: the config cannot start", {{"pid", pid}, {"error", std::string_view(made.err().message)}});
    return 2;
  }
  std::unique_ptr<gateway> gw = std::move(made).value();
  auto ep = gw->start(listening.get(), admin_listening.get());
  listening.reset();  // the threads accept on their own duplicates: once they stop, this worker holds none
  admin_listening.reset();
  if (!ep) {
    obs::log_error("worker process: cannot serve", {{"pid", pid}, {"error", std::string_view(ep.err().message)}});
    return 1;
  }
  const char ready = 'r';
  const bool said = ::write(ready_pipe.get(), &ready, 1) == 1;
  ready_pipe.reset();
  if (!said) return 1;
  obs::log_info("worker process serving", {{"pid", pid},
                                           {"generation", static_cast<std::uint64_t>(pod ? pod.pod->workers[pod.row].generation.load() : 0)},
                                           {"threads", static_cast<std::uint64_t>(opts.http.threads)}});
  // The supervisor sends one signal and later, if need be, SIGKILL: whatever comes after the
  // first signal changes nothing (a retiring worker that the pod's SIGTERM reaches finishes alike).
  net::io_context signals_ctx(1);
  net::signal_set signals(signals_ctx, SIGINT, SIGTERM, SIGUSR2);
  int got = 0;
  signals.async_wait([&got](const error_code& ec, int sig) {
    if (!ec) got = sig;
  });
  signals_ctx.run();
  signals_ctx.restart();
  signals.async_wait([](const error_code&, int) {});  // later signals: caught and ignored
  if (got == SIGUSR2) gw->retire();
  else gw->drain();
  signals.cancel();
  obs::log_info("worker process stopped", {{"pid", pid}});
  return 0;
}

}  // namespace sluice::app
