#include "app/supervisor.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "app/gateway.hpp"
#include "app/pod.hpp"
#include "app/worker_process.hpp"
#include "observability/log.hpp"
#include "runtime/service_notify.hpp"
#include "runtime/shared_segment.hpp"
#include "runtime/unique_fd.hpp"

namespace sluice::app {

namespace {

using clock = std::chrono::steady_clock;

// A worker that has not said it serves within this long is killed (and counts as failing).
constexpr auto ready_timeout = std::chrono::seconds(30);
// A worker that dies sooner than this after its start is failing again: its replacement waits
// restart_delay() (generation.cpp): at once the first time, then 250 ms doubling to 10 s.
constexpr auto quick_death = std::chrono::seconds(10);
// A fork that failed is tried again this much later.
constexpr auto spawn_retry = std::chrono::seconds(10);
// After SIGTERM the workers get drain_delay + drain_timeout and this much more before SIGKILL.
constexpr auto stop_grace = std::chrono::seconds(5);

double ms(clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

struct process {
  pid_t pid = 0;
  std::size_t row = 0;
  std::size_t position = 0;  // its place in its generation, 0..N-1
  std::uint32_t generation = 0;
  runtime::unique_fd ready_fd;  // the read end of its ready pipe, until it says ready (or dies)
  bool ready = false;
  bool retiring = false;     // asked to finish (a reload replaced it, or the pod stops)
  clock::time_point started;
};

struct generation {
  std::uint32_t number = 0;
  std::shared_ptr<const serve_options> opts;
  std::size_t processes = 0;
  std::vector<unsigned> failures;                        // per position: quick deaths in a row
  std::vector<std::optional<clock::time_point>> restart;  // per position: a replacement due then
};

generation make_generation(std::uint32_t number, serve_options opts) {
  generation g;
  g.number = number;
  const auto n = opts.process_count();
  g.processes = n ? *n : 1;
  g.opts = std::make_shared<const serve_options>(std::move(opts));
  g.failures.assign(g.processes, 0);
  g.restart.assign(g.processes, std::nullopt);
  return g;
}

class supervisor {
 public:
  supervisor(serve_options opts, supervisor_settings settings)
      : settings_(std::move(settings)), current_(make_generation(0, std::move(opts))), self_(::getpid()) {}
  supervisor(const supervisor&) = delete;
  supervisor& operator=(const supervisor&) = delete;

  int run();

 private:
  // run()'s steps: the listening sockets, the signals and the handover mesh; the first generation's
  // workers; one wait for a signal, a ready worker or the next deadline.
  result<void> set_up();
  void start_workers();
  void poll_once(std::vector<pollfd>& fds);
  result<void> bind_listener();
  static result<runtime::unique_fd> bind_address(const std::string& listen);
  bool spawn(generation& g, std::size_t position);
  [[noreturn]] void child(const generation& g, std::size_t row, int ready_w);
  void on_signal(int sig);
  void reap();
  void ended(const process& p, int status);
  void on_ready(process& p);
  void on_timers(clock::time_point now);
  void reload();
  void abort_reload(std::string_view why);
  void stop(std::string_view why);
  std::optional<clock::time_point> next_deadline() const;
  std::size_t free_row() const;

  supervisor_settings settings_;
  generation current_;
  std::optional<generation> next_;  // a reload whose workers are starting
  pid_t self_;
  runtime::unique_fd listener_;
  runtime::unique_fd admin_;  // admin-listen's socket, when configured
  runtime::unique_fd sigfd_;
  runtime::shared_segment<pod_state> pod_;
  // Every worker row's socket pair for handed-over connections, inherited by every worker.
  std::unique_ptr<runtime::handover_mesh> mesh_;
  obs::exposition ended_;  // the sums of every worker that has ended (pod_->ended holds it written)
  std::vector<process> procs_;
  enum class phase { starting, serving, stopping } phase_ = phase::starting;
  clock::time_point kill_at_{};
  bool killed_all_ = false;
  int exit_code_ = 0;
};

result<void> supervisor::bind_listener() {
  auto fd = bind_address(current_.opts->http.listen);
  if (!fd) return std::move(fd).err();
  listener_ = std::move(*fd);
  if (!current_.opts->http.admin_listen.empty()) {
    auto a = bind_address(current_.opts->http.admin_listen);
    if (!a) return std::move(a).err();
    admin_ = std::move(*a);
  }
  return ok;
}

result<runtime::unique_fd> supervisor::bind_address(const std::string& listen) {
  auto ep = listen_endpoint(listen);
  if (!ep) return std::move(ep).err();
  runtime::unique_fd fd(::socket(ep->protocol().family(), SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return error::make(errc::internal, std::string("socket: ") + std::strerror(errno));
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd.get(), ep->data(), static_cast<socklen_t>(ep->size())) != 0 || ::listen(fd.get(), SOMAXCONN) != 0) {
    const int e = errno;
    fd.reset();
    return error::make(errc::internal, "cannot listen on " + listen + ": " + std::strerror(e));
  }
  return fd;
}

std::size_t supervisor::free_row() const {
  for (std::size_t i = 0; i < pod_state::max_workers; ++i) {
    if (pod_->workers[i].pid.load() != 0) continue;
    const bool taken = std::any_of(procs_.begin(), procs_.end(), [i](const process& p) { return p.row == i; });
    if (!taken) return i;
  }
  return pod_state::max_workers;
}

bool supervisor::spawn(generation& g, std::size_t position) {
  const std::size_t row = free_row();
  if (row == pod_state::max_workers) {
    obs::log_error("no free row for a worker process", {{"generation", static_cast<std::uint64_t>(g.number)}});
    return false;
  }
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    obs::log_error("pipe for a worker process failed", {{"error", std::string_view(std::strerror(errno))}});
    return false;
  }
  runtime::unique_fd ready_r(fds[0]), ready_w(fds[1]);
  // The row says its generation before the worker starts: the worker reads it at once (the pod's
  // shared tables tell a reload's generation by it).
  pod_->workers[row].rss_bytes.store(0);
  pod_->workers[row].connections.store(0);  // (a killed worker's count stays in its row)
  pod_->workers[row].generation.store(g.number);
  std::fflush(nullptr);  // nothing buffered is written twice
  const pid_t pid = ::fork();
  if (pid < 0) {
    obs::log_error("fork of a worker process failed", {{"error", std::string_view(std::strerror(errno))}});
    return false;
  }
  if (pid == 0) {
    ready_r.reset();
    child(g, row, ready_w.release());  // the worker's from here (it never returns)
  }
  ready_w.reset();
  pod_->workers[row].pid.store(pid);  // (the worker stores it too, first thing: whichever is first)
  process p;
  p.pid = pid;
  p.row = row;
  p.position = position;
  p.generation = g.number;
  p.ready_fd = std::move(ready_r);
  p.started = clock::now();
  procs_.push_back(std::move(p));
  obs::log_info("worker process started", {{"pid", static_cast<std::int64_t>(pid)},
                                           {"generation", static_cast<std::uint64_t>(g.number)},
                                           {"position", static_cast<std::uint64_t>(position)}});
  return true;
}

void supervisor::child(const generation& g, std::size_t row, int ready_w) {
  // The supervisor's descriptors and signal mask are not the worker's.
  sigfd_.reset();
  for (auto& p : procs_) p.ready_fd.reset();
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // A supervisor that dies (even by SIGKILL) drains its workers rather than orphaning them.
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != self_) std::_Exit(0);
  pod_->workers[row].pid.store(::getpid());
  const int code = run_worker(*g.opts, listener_.get(), admin_.get(), pod_link{pod_.get(), row, mesh_.get()}, ready_w);
  std::fflush(nullptr);
  std::_Exit(code);
}

int supervisor::run() {
  if (auto r = set_up(); !r) {
    std::fprintf(stderr, "sluice serve: %s\n", r.err().message.c_str());
    return 1;
  }
  start_workers();
  std::vector<pollfd> fds;
  while (phase_ != phase::stopping || !procs_.empty()) {
    poll_once(fds);
    on_timers(clock::now());
  }
  obs::log_info("supervisor stopped: every worker process has ended");
  return exit_code_;
}

result<void> supervisor::set_up() {
  if (auto r = bind_listener(); !r) return r;
  sigset_t mask;
  ::sigemptyset(&mask);
  for (int s : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) ::sigaddset(&mask, s);
  ::sigprocmask(SIG_BLOCK, &mask, nullptr);
  sigfd_.reset(::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!sigfd_) {
    const int e = errno;
    return error::make(errc::internal, std::string("signalfd: ") + std::strerror(e));
  }
  try {
    mesh_ = std::make_unique<runtime::handover_mesh>(pod_state::max_workers);
  } catch (const std::system_error& e) {
    return error::make(errc::internal, e.what());
  }
  return ok;
}

void supervisor::start_workers() {
  pod_->processes.store(static_cast<std::uint32_t>(current_.processes));
  obs::log_info("supervisor starting worker processes",
                {{"processes", static_cast<std::uint64_t>(current_.processes)},
                 {"threads_each", static_cast<std::uint64_t>(current_.opts->http.threads)},
                 {"listen", std::string_view(current_.opts->http.listen)}});
  for (std::size_t i = 0; i < current_.processes; ++i)
    if (!spawn(current_, i)) stop("a worker process could not be started");
}

void supervisor::poll_once(std::vector<pollfd>& fds) {
  fds.clear();
  fds.push_back({sigfd_.get(), POLLIN, 0});
  for (auto& p : procs_)
    if (p.ready_fd) fds.push_back({p.ready_fd.get(), POLLIN, 0});
  int timeout = -1;
  if (auto d = next_deadline()) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(*d - clock::now()).count();
    timeout = static_cast<int>(std::clamp<long long>(left, 0, 60'000));
  }
  const int n = ::poll(fds.data(), fds.size(), timeout);
  if (n < 0 && errno != EINTR) {
    obs::log_error("supervisor poll failed", {{"error", std::string_view(std::strerror(errno))}});
    stop("poll failed");
  }
  if (n <= 0) return;
  for (std::size_t i = 1; i < fds.size(); ++i) {
    if (fds[i].revents == 0) continue;
    auto it = std::find_if(procs_.begin(), procs_.end(), [fd = fds[i].fd](const process& p) { return p.ready_fd.get() == fd; });
    if (it != procs_.end()) on_ready(*it);
  }
  if (fds[0].revents & POLLIN) {
    signalfd_siginfo si;
    while (::read(sigfd_.get(), &si, sizeof si) == static_cast<ssize_t>(sizeof si)) on_signal(static_cast<int>(si.ssi_signo));
  }
}

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
  const worker_exit kind = !by_signal ? worker_exit::exit : code == SIGKILL ? worker_exit::killed : worker_exit::signal;
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

}  // namespace

int supervise(serve_options opts, supervisor_settings settings) {
  supervisor s(std::move(opts), std::move(settings));
  return s.run();
}

}  // namespace sluice::app
