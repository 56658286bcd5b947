// run_pod_process: the life of one process of `sluice serve --processes N`, in the child the
// supervisor forked: build a gateway from the generation's options, accept on the inherited
// listening socket, say "ready" on `ready_fd`, then serve until SIGTERM/SIGINT (drain) or SIGUSR2
// (a reload replaced it: retire). Returns the process's exit code.
#pragma once

#include "app/pod.hpp"
#include "app/serve_options.hpp"

namespace sluice::app {

// `admin`: the inherited admin-listen socket, or -1. The three descriptors become run_pod_process's
// (runtime::unique_fd): closed once the gateway holds its own duplicates, or on the way out.
int run_pod_process(const serve_options& opts, int listener, int admin, pod_link pod, int ready_fd);

}  // namespace sluice::app
