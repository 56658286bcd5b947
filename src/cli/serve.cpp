// `sluice serve`: flags + optional YAML -> serve_options -> app::gateway, until SIGINT/SIGTERM.
#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include <boost/asio/signal_set.hpp>

#include "app/gateway.hpp"
#include "cli/commands.hpp"
#include "config/option_table.hpp"

namespace sluice::cli {

namespace {

struct serve_state {
  app::serve_options opts;
  config::option_table table;
  std::string config_file;
};

int run_serve(serve_state& st) {
  if (!st.config_file.empty()) {
    if (auto r = st.table.apply_yaml_file(st.config_file); !r) {
      std::fprintf(stderr, "sluice serve: %s\n", r.err().message.c_str());
      return 2;
    }
  }
  if (auto r = st.table.apply_cli(); !r) {
    std::fprintf(stderr, "sluice serve: %s\n", r.err().message.c_str());
    return 2;
  }
  if (auto r = st.opts.validate(); !r) {
    std::fprintf(stderr, "sluice serve: %s\n", r.err().message.c_str());
    return 2;
  }
  const char* key = std::getenv(st.opts.upstream.key_env.c_str());
  app::gateway gw(st.opts, key ? key : "");
  auto ep = gw.start();
  if (!ep) {
    std::fprintf(stderr, "sluice serve: %s\n", ep.err().message.c_str());
    return 1;
  }
  std::printf("sluice serve listening on %s:%u (upstream %s)\n", ep->address().to_string().c_str(),
              static_cast<unsigned>(ep->port()), st.opts.upstream.url.c_str());
  std::fflush(stdout);

  net::io_context signals_ctx(1);
  net::signal_set signals(signals_ctx, SIGINT, SIGTERM);
  signals.async_wait([](const error_code&, int) {});
  signals_ctx.run();
  gw.stop();
  return 0;
}

}  // namespace

command add_serve(CLI::App& root) {
  auto st = std::make_shared<serve_state>();
  CLI::App* app = root.add_subcommand("serve", "run the gateway");
  st->opts.register_options(st->table);
  st->table.register_cli(*app);
  app->add_option("--config", st->config_file, "YAML file with option names as keys (flags win)");
  return {app, [st] { return run_serve(*st); }};
}

}  // namespace sluice::cli
