// The subcommands of the `sluice` binary. Each lives in one thin file: flags -> options -> one
// library call. Registration happens on the main thread before parsing.
#pragma once

#include <functional>

namespace CLI {
class App;
}

namespace sluice::cli {

struct command {
  CLI::App* app = nullptr;
  std::function<int()> run;  // called when this subcommand was chosen; returns the exit code
};

command add_serve(CLI::App& root);
command add_sim(CLI::App& root);
command add_flood(CLI::App& root);

}  // namespace sluice::cli
