// gateway: the composition root of `sluice serve`. Builds every part from serve_options, owns their
// lifetimes (worker threads, per-thread servers and upstream clients), and runs and stops them.
// start()/stop() are called from one controlling thread (main, or a test).
#pragma once

#include <memory>
#include <vector>

#include "app/serve_options.hpp"
#include "core/error.hpp"
#include "http/server.hpp"
#include "proxy/handler.hpp"
#include "runtime/worker_pool.hpp"

namespace sluice::app {

class gateway {
 public:
  // `upstream_key` is the key value itself (from the environment); empty for pass-through.
  gateway(serve_options opts, std::string upstream_key);
  ~gateway();
  gateway(const gateway&) = delete;
  gateway& operator=(const gateway&) = delete;

  // Binds every worker thread's listener and starts serving. Returns the bound address.
  result<tcp::endpoint> start();
  // Closes every connection and joins the threads. Idempotent.
  void stop();

  const serve_options& options() const noexcept { return opts_; }
  std::uint64_t open_connections() const noexcept { return server_shared_.open_connections.load(); }

 private:
  struct worker {
    std::unique_ptr<proxy::handler> handler;
    std::unique_ptr<http::server> server;
  };

  serve_options opts_;
  std::unique_ptr<upstream::ssl::context> tls_;
  std::unique_ptr<proxy::shared_config> shared_;
  http::server_shared server_shared_;
  runtime::worker_pool pool_;
  std::vector<worker> workers_;  // after pool_: destroyed first, while the io_contexts still exist
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace sluice::app
