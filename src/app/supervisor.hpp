// supervisor: `sluice serve --processes N` (docs/processes.md, ADR 0012). One small single-threaded
// process binds the listen address once, maps the pod's shared segment, and forks N worker
// processes that each run a whole gateway and accept on the socket they inherit. It restarts a
// worker that dies (at once, then with backoff if it keeps dying), drains them all on
// SIGTERM/SIGINT, and reloads on SIGHUP by starting a new generation beside the old one.
// Call supervise() from the main thread before any other thread exists (it forks).
#pragma once

#include <chrono>
#include <functional>

#include "app/serve_options.hpp"
#include "core/error.hpp"

namespace sluice::app {

struct supervisor_settings {
  // Reads the config again for SIGHUP (the config file, the flags, the keys file): the next
  // generation's options, checked, or why not (the running generation then serves on).
  std::function<result<serve_options>()> reload;
};

// Whether a gateway can be built from `opts` (routing, the keys file): what a worker would refuse
// at start, found before any worker starts. Reads the keys file into opts.keys_text, which every
// worker of the generation then uses.
result<void> prepare_generation(serve_options& opts);

// How long the replacement of a worker that ended waits, given how many times in a row it ended
// within 10 s of its start (1: at once; then 250 ms, doubling, at most 10 s).
std::chrono::milliseconds restart_delay(unsigned quick_deaths_in_a_row);

// Runs the pod with opts.process_count() workers until SIGTERM/SIGINT and the workers' drain;
// returns the process's exit code (0 after a clean stop; 1 when the first workers could not start).
int supervise(serve_options opts, supervisor_settings settings);

}  // namespace sluice::app
