// `sluice flood`: flags and an optional YAML file -> loadgen::options -> loadgen::run -> report.
// Exit codes: 0 every request succeeded (or was an intended abandon), 1 otherwise, 2 bad flags.
#include <CLI/CLI.hpp>

#include <signal.h>

#include <atomic>
#include <cstdio>
#include <memory>

#include "cli/commands.hpp"
#include "loadgen/loadgen.hpp"

namespace sluice::cli {
namespace {

// Set by the first SIGINT/SIGTERM: the run ends early and the report is still printed. A second
// signal kills the process (the handler restores the default action).
std::atomic<bool> interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free, "written from a signal handler");

extern "C" void on_interrupt(int sig) {
  interrupted.store(true);
  signal(sig, SIG_DFL);
}

// The options and the table that writes into them live as long as the command.
struct flood_command {
  loadgen::options opts;
  config::option_table table;
  std::string config_file;
};

int run_flood(flood_command& cmd) {
  if (!cmd.config_file.empty()) {
    if (auto r = cmd.table.apply_yaml_file(cmd.config_file); !r) {
      std::fprintf(stderr, "sluice flood: %s\n", r.err().message.c_str());
      return 2;
    }
  }
  if (auto r = cmd.table.apply_cli(); !r) {
    std::fprintf(stderr, "sluice flood: %s\n", r.err().message.c_str());
    return 2;
  }
  if (auto r = loadgen::validate(cmd.opts); !r) {
    std::fprintf(stderr, "sluice flood: %s\n", r.err().message.c_str());
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  signal(SIGINT, on_interrupt);
  signal(SIGTERM, on_interrupt);
  cmd.opts.cancel = &interrupted;
  auto rep = loadgen::run(cmd.opts);
  if (!rep) {
    std::fprintf(stderr, "sluice flood: %s\n", rep.err().message.c_str());
    return rep.err().code == errc::bad_request ? 2 : 1;
  }
  const std::string text = cmd.opts.json ? loadgen::format_json(*rep) : loadgen::format_text(*rep);
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
  return loadgen::all_ok(*rep) ? 0 : 1;
}

}  // namespace

command add_flood(CLI::App& root) {
  auto cmd = std::make_shared<flood_command>();
  auto* app = root.add_subcommand("flood", "open N concurrent streams against a target and verify every one");
  app->add_option("--config", cmd->config_file, "YAML file of flood options (flags override it)");
  cmd->opts.register_options(cmd->table);
  cmd->table.register_cli(*app);
  return {app, [cmd] { return run_flood(*cmd); }};
}

}  // namespace sluice::cli
