// The supervisor's answers to what happens (supervisor_parts.hpp): a process says ready, ends, or
// a signal or deadline comes: restarts with backoff, reloads (a new generation beside the old one),
// the drain and stop.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "app/supervisor_parts.hpp"
#include "observability/log.hpp"
#include "runtime/service_notify.hpp"

namespace sluice::app::supervision {

void supervisor::on_ready(process& p) {
  char c = 0;
  const ssize_t got = ::read(p.ready_fd.get(), &c, 1);
  if (got < 0 && (errno == EAGAIN || errno == EINTR)) return;
  p.ready_fd.reset();
  if (got != 1) return;  // it died before it served: SIGCHLD tells how
  p.ready = true;
  const auto all_ready = [this](const generation& g) {
    std::size_t n = 0;
    for (auto& q : procs_) n += (q.generation == g.number && q.ready && !q.retiring) ? 1 : 0;
    return n == g.processes;
  };
  if (p.generation == current_.number && phase_ == phase::starting && all_ready(current_)) {
    phase_ = phase::serving;
    std::string upstreams;
    serve_options finished = *current_.opts;
    (void)finished.finish_routing();  // checked before the first fork
    for (const auto& u : finished.routing.upstreams) upstreams += (upstreams.empty() ? "" : ", ") + u.name + "=" + u.url;
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    ::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&addr), &len);
    tcp::endpoint ep;
    std::memcpy(ep.data(), &addr, std::min<std::size_t>(len, ep.capacity()));
    ep.resize(len);
    std::string admin;
    if (admin_) {
      sockaddr_storage aaddr{};
      socklen_t alen = sizeof aaddr;
      ::getsockname(admin_.get(), reinterpret_cast<sockaddr*>(&aaddr), &alen);
      tcp::endpoint aep;
      std::memcpy(aep.data(), &aaddr, std::min<std::size_t>(alen, aep.capacity()));
      aep.resize(alen);
      admin = "; admin " + aep.address().to_string() + ":" + std::to_string(aep.port());
    }
    std::printf("sluice serve listening on %s:%u (upstream %s; %zu worker processes%s)\n", ep.address().to_string().c_str(),
                static_cast<unsigned>(ep.port()), upstreams.c_str(), current_.processes, admin.c_str());
    std::fflush(stdout);
    obs::log_info("sluice serve started", {{"listen", std::string_view(current_.opts->http.listen)},
                                           {"port", static_cast<std::uint64_t>(ep.port())},
                                           {"processes", static_cast<std::uint64_t>(current_.processes)}});
    runtime::notify_service("READY=1");
  } else if (next_ && p.generation == next_->number && all_ready(*next_)) {
    // The new generation serves: the old one stops accepting and finishes its streams.
    for (auto& q : procs_) {
      if (q.generation != current_.number || q.retiring) continue;
      q.retiring = true;
      ::kill(q.pid, SIGUSR2);
    }
    current_ = std::move(*next_);
    next_.reset();
    pod_->generation.store(current_.number);
    pod_->processes.store(static_cast<std::uint32_t>(current_.processes));
    pod_->reloads_done.fetch_add(1);
    obs::log_info("config reloaded: the new workers serve, the old ones finish their streams",
                  {{"generation", static_cast<std::uint64_t>(current_.number)},
                   {"processes", static_cast<std::uint64_t>(current_.processes)}});
    runtime::notify_service("READY=1");
  }
}

void supervisor::on_signal(int sig) {
  switch (sig) {
    case SIGCHLD: reap(); break;
    case SIGHUP: reload(); break;
    case SIGTERM:
    case SIGINT:
      if (phase_ != phase::stopping) {
        stop(sig == SIGTERM ? "SIGTERM" : "SIGINT");
      } else if (!killed_all_) {
        obs::log_warn("second signal: killing every worker process now");
        for (auto& p : procs_) ::kill(p.pid, SIGKILL);
        killed_all_ = true;
      }
      break;
    default: break;
  }
}

void supervisor::stop(std::string_view why) {
  if (phase_ == phase::stopping) return;
  const bool failed_start = phase_ == phase::starting;
  phase_ = phase::stopping;
  next_.reset();
  const auto& o = *current_.opts;
  kill_at_ = clock::now() + o.drain_delay + o.drain_timeout + stop_grace;
  runtime::notify_service("STOPPING=1");
  obs::log_info("stopping: every worker process drains", {{"why", why}, {"workers", static_cast<std::uint64_t>(procs_.size())}});
  // Workers still starting have no streams: they go at once.
  for (auto& p : procs_) ::kill(p.pid, failed_start || !p.ready ? SIGKILL : SIGTERM);
}

void supervisor::reap() {
  int status = 0;
  pid_t pid;
  while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
    auto it = std::find_if(procs_.begin(), procs_.end(), [pid](const process& p) { return p.pid == pid; });
    if (it == procs_.end()) continue;
    process p = std::move(*it);  // its ready pipe (if still open) closes with it
    procs_.erase(it);
    release_ended_worker(*pod_, p.row, *mesh_);  // what it held goes back to the pod
    fold_ended_worker(*pod_, p.row, ended_);      // its counters stay in the pod's sums; frees the row
    ended(p, status);
  }
}

void supervisor::ended(const process& p, int status) {
  const auto uptime = clock::now() - p.started;
  const bool by_signal = WIFSIGNALED(status);
  const int code = by_signal ? WTERMSIG(status) : WEXITSTATUS(status);
  if (phase_ == phase::stopping || p.retiring) {
    obs::log_info("worker process finished", {{"pid", static_cast<std::int64_t>(p.pid)},
                                              {"generation", static_cast<std::uint64_t>(p.generation)},
                                              {by_signal ? "signal" : "exit_code", static_cast<std::int64_t>(code)}});
    if (phase_ == phase::stopping && !p.ready && exit_code_ == 0 && !by_signal && code != 0) exit_code_ = code;
    return;
  }
  const process_exit kind = !by_signal ? process_exit::exit : code == SIGKILL ? process_exit::killed : process_exit::signal;
  pod_->exits[static_cast<std::size_t>(kind)].fetch_add(1);
  obs::log_error("worker process ended unexpectedly: its own connections were cut, the others' go on",
                 {{"pid", static_cast<std::int64_t>(p.pid)},
                  {"reason", to_string(kind)},
                  {by_signal ? "signal" : "exit_code", static_cast<std::int64_t>(code)},
                  {"generation", static_cast<std::uint64_t>(p.generation)},
                  {"uptime_ms", ms(uptime)}});
  if (next_ && p.generation == next_->number) {
    abort_reload("a worker of the new config ended before it served");
    return;
  }
  if (p.generation != current_.number) return;
  if (phase_ == phase::starting && !p.ready) {
    exit_code_ = by_signal ? 1 : (code == 0 ? 1 : code);
    stop("a worker process could not start");
    return;
  }
  unsigned& failures = current_.failures[p.position];
  failures = uptime < quick_death ? failures + 1 : 1;
  const clock::duration delay = restart_delay(failures);
  current_.restart[p.position] = clock::now() + delay;
  if (delay > clock::duration::zero())
    obs::log_warn("worker process keeps ending: its replacement waits", {{"position", static_cast<std::uint64_t>(p.position)},
                                                                        {"failures_in_a_row", static_cast<std::uint64_t>(failures)},
                                                                        {"delay_ms", ms(delay)}});
}

void supervisor::reload() {
  if (phase_ != phase::serving) {
    obs::log_warn("SIGHUP ignored: the pod is not serving yet, or is stopping");
    return;
  }
  if (next_) {
    obs::log_warn("SIGHUP ignored: a reload is still starting its workers",
                  {{"generation", static_cast<std::uint64_t>(next_->number)}});
    return;
  }
  auto refuse = [this](std::string_view why) {
    pod_->reloads_refused.fetch_add(1);
    obs::log_error("config reload refused: the running config serves on", {{"why", why}});
  };
  if (!settings_.reload) return refuse("no config to read again");
  auto opts = settings_.reload();
  if (!opts) return refuse(opts.err().message);
  if (auto r = prepare_generation(*opts); !r) return refuse(r.err().message);
  if (opts->http.listen != current_.opts->http.listen || opts->http.admin_listen != current_.opts->http.admin_listen)
    return refuse("listen and admin-listen cannot change by a reload (restart the pod)");
  auto g = make_generation(current_.number + 1, std::move(*opts));
  std::size_t live = procs_.size();
  if (live + g.processes > pod_state::max_workers) return refuse("the previous generation is still finishing its streams");
  runtime::notify_service("RELOADING=1");
  obs::log_info("config reload: starting the new generation's workers",
                {{"generation", static_cast<std::uint64_t>(g.number)}, {"processes", static_cast<std::uint64_t>(g.processes)}});
  next_ = std::move(g);
  for (std::size_t i = 0; i < next_->processes; ++i) {
    if (!spawn(*next_, i)) {
      abort_reload("a worker process could not be started");
      return;
    }
  }
}

void supervisor::abort_reload(std::string_view why) {
  if (!next_) return;
  // Workers of the new generation may already hold connections: they finish like old ones.
  for (auto& p : procs_) {
    if (p.generation != next_->number || p.retiring) continue;
    p.retiring = true;
    ::kill(p.pid, p.ready ? SIGUSR2 : SIGKILL);
  }
  next_.reset();
  pod_->reloads_refused.fetch_add(1);
  runtime::notify_service("READY=1");  // the running generation serves on: the reload is over
  obs::log_error("config reload refused: the running config serves on", {{"why", why}});
}

std::optional<clock::time_point> supervisor::next_deadline() const {
  std::optional<clock::time_point> d;
  auto take = [&d](clock::time_point t) { d = d ? std::min(*d, t) : t; };
  if (phase_ == phase::stopping) {
    if (!killed_all_) take(kill_at_);
    return d;
  }
  for (auto& r : current_.restart)
    if (r) take(*r);
  for (auto& p : procs_)
    if (!p.ready && !p.retiring) take(p.started + ready_timeout);
  return d;
}

void supervisor::on_timers(clock::time_point now) {
  if (phase_ == phase::stopping) {
    if (!killed_all_ && now >= kill_at_ && !procs_.empty()) {
      obs::log_warn("workers still running after the drain: killing them", {{"workers", static_cast<std::uint64_t>(procs_.size())}});
      for (auto& p : procs_) ::kill(p.pid, SIGKILL);
      killed_all_ = true;
    }
    return;
  }
  for (auto& p : procs_) {
    if (p.ready || p.retiring || now < p.started + ready_timeout) continue;
    obs::log_error("worker process did not serve in time: killing it", {{"pid", static_cast<std::int64_t>(p.pid)}});
    ::kill(p.pid, SIGKILL);
    p.started = now + std::chrono::hours(1);  // not again while it goes
  }
  for (std::size_t i = 0; i < current_.restart.size(); ++i) {
    if (!current_.restart[i] || now < *current_.restart[i]) continue;
    current_.restart[i].reset();
    if (spawn(current_, i)) pod_->restarts.fetch_add(1);
    else current_.restart[i] = now + spawn_retry;
  }
}

}  // namespace sluice::app::supervision
