// `sluice sim`: flags and an optional YAML file -> sim::options -> sim::server, until SIGINT/SIGTERM.
#include <CLI/CLI.hpp>

#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <memory>

#include "cli/commands.hpp"
#include "runtime/loop_pool.hpp"
#include "sim/server.hpp"

namespace sluice::cli {
namespace {

// The options and the table that writes into them live as long as the command.
struct sim_command {
  sim::options opts;
  config::option_table table;
  std::string config_file;
};

std::string format_endpoint(const tcp::endpoint& ep) {
  auto a = ep.address();
  return (a.is_v6() ? "[" + a.to_string() + "]" : a.to_string()) + ":" + std::to_string(ep.port());
}

int run_sim(sim_command& cmd) {
  if (!cmd.config_file.empty()) {
    if (auto r = cmd.table.apply_yaml_file(cmd.config_file); !r) {
      std::fprintf(stderr, "sluice sim: %s\n", r.err().message.c_str());
      return 2;
    }
  }
  if (auto r = cmd.table.apply_cli(); !r) {
    std::fprintf(stderr, "sluice sim: %s\n", r.err().message.c_str());
    return 2;
  }
  runtime::raise_fd_limit();
  // Block the stop signals before the worker threads exist so they inherit the mask and only
  // sigwait below receives them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  sim::server server(cmd.opts);
  auto ep = server.start();
  if (!ep) {
    std::fprintf(stderr, "sluice sim: %s\n", ep.err().message.c_str());
    return 1;
  }
  // Scripts parse this line for the port (port 0 picks a free one).
  std::printf("sluice sim listening on %s\n", format_endpoint(*ep).c_str());
  std::fflush(stdout);

  int sig = 0;
  sigwait(&stop_signals, &sig);
  server.stop();
  auto s = server.snapshot();
  std::fprintf(stderr,
               "sluice sim: stopped: requests=%llu streams_started=%llu completed=%llu aborted=%llu "
               "connections_accepted=%llu timer_waits=%llu late_over_1ms=%llu late_over_10ms=%llu "
               "late_max_ms=%.1f\n",
               static_cast<unsigned long long>(s.requests), static_cast<unsigned long long>(s.streams_started),
               static_cast<unsigned long long>(s.streams_completed), static_cast<unsigned long long>(s.streams_aborted),
               static_cast<unsigned long long>(s.connections_accepted), static_cast<unsigned long long>(s.timer_waits),
               static_cast<unsigned long long>(s.timer_late_1ms), static_cast<unsigned long long>(s.timer_late_10ms),
               static_cast<double>(s.timer_late_max_us) / 1000.0);
  return 0;
}

}  // namespace

command add_sim(CLI::App& root) {
  auto cmd = std::make_shared<sim_command>();
  auto* app = root.add_subcommand(
      "sim", "OpenAI-, Azure OpenAI- and Anthropic-compatible upstream simulator with fault injection");
  app->add_option("--config", cmd->config_file, "YAML file of options (the flag names without dashes)");
  cmd->opts.register_options(cmd->table);
  cmd->table.register_cli(*app);
  return {app, [cmd] { return run_sim(*cmd); }};
}

}  // namespace sluice::cli
