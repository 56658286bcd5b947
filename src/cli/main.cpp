// sluice: the gateway (serve), its upstream simulator (sim) and its load generator (flood).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <vector>

#include "cli/commands.hpp"

int main(int argc, char** argv) {
  CLI::App root{"sluice: an OpenAI-compatible streaming gateway in bounded memory"};
  root.require_subcommand(1);
  root.set_version_flag("--version", "sluice " SLUICE_VERSION);
  std::vector<sluice::cli::command> commands{
      sluice::cli::add_serve(root),
      sluice::cli::add_sim(root),
      sluice::cli::add_flood(root),
  };
  try {
    root.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return root.exit(e);
  }
  try {
    for (auto& c : commands)
      if (c.app->parsed()) return c.run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sluice: fatal: %s\n", e.what());
    return 70;
  }
  return 2;
}
