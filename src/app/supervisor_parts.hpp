// The supervisor's parts (supervisor.hpp is its one entry point, supervise()): the process and
// generation records, the timing constants, and the class whose members are split between
// supervisor.cpp (setting up, forking, the wait loop) and supervisor_events.cpp (what it does when a
// process says ready, ends, or a signal or deadline comes: restarts, reloads, the stop).
// Internal to app/; single-threaded.
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "app/pod.hpp"
#include "app/supervisor.hpp"
#include "observability/exposition.hpp"
#include "runtime/handover.hpp"
#include "runtime/shared_segment.hpp"
#include "runtime/unique_fd.hpp"

namespace sluice::app::supervision {

using clock = std::chrono::steady_clock;

// A worker that has not said it serves within this long is killed (and counts as failing).
inline constexpr auto ready_timeout = std::chrono::seconds(30);
// A worker that dies sooner than this after its start is failing again: its replacement waits
// restart_delay() (generation.cpp): at once the first time, then 250 ms doubling to 10 s.
inline constexpr auto quick_death = std::chrono::seconds(10);
// A fork that failed is tried again this much later.
inline constexpr auto spawn_retry = std::chrono::seconds(10);
// After SIGTERM the workers get drain_delay + drain_timeout and this much more before SIGKILL.
inline constexpr auto stop_grace = std::chrono::seconds(5);

inline double ms(clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

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

inline generation make_generation(std::uint32_t number, serve_options opts) {
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

}  // namespace sluice::app::supervision
