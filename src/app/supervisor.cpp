#include "app/supervisor_parts.hpp"

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
#include "app/pod_process.hpp"
#include "observability/log.hpp"
#include "runtime/service_notify.hpp"
#include "runtime/shared_segment.hpp"
#include "runtime/unique_fd.hpp"

namespace sluice::app {

namespace supervision {

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
  const int code = run_pod_process(*g.opts, listener_.get(), admin_.get(), pod_link{pod_.get(), row, mesh_.get()}, ready_w);
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

}  // namespace supervision

int supervise(serve_options opts, supervisor_settings settings) {
  supervision::supervisor s(std::move(opts), std::move(settings));
  return s.run();
}

}  // namespace sluice::app
