// `sluice serve`: flags + optional YAML -> serve_options -> app::gateway, until SIGINT/SIGTERM.
#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include <boost/asio/signal_set.hpp>

#include <thread>

#include "app/deployment.hpp"
#include "app/gateway.hpp"
#include "app/supervisor.hpp"
#include "observability/log.hpp"
#include "cli/commands.hpp"
#include "config/commented_yaml.hpp"
#include "config/option_table.hpp"
#include "runtime/service_notify.hpp"

namespace sluice::cli {

namespace {

struct serve_state {
  app::serve_options opts;
  config::option_table table;
  std::string config_file;
  bool print_config = false;
};

// The config file, then the flags (they win), checked.
result<void> load(config::option_table& table, const std::string& config_file, const app::serve_options& opts) {
  if (!config_file.empty())
    if (auto r = table.apply_yaml_file(config_file); !r) return r;
  if (auto r = table.apply_cli(); !r) return r;
  return opts.validate();
}

// SIGHUP under a supervisor: the same file and flags read into fresh options.
result<app::serve_options> load_again(const serve_state& st) {
  app::serve_options opts;
  config::option_table table;
  opts.register_options(table);
  table.adopt_cli_values(st.table);
  if (auto r = load(table, st.config_file, opts); !r) return std::move(r).err();
  return opts;
}

// The config read and logging set up: 0, or the exit code of what failed (said on stderr).
int prepare(serve_state& st) {
  if (auto r = load(st.table, st.config_file, st.opts); !r) {
    std::fprintf(stderr, "sluice serve: %s\n", r.err().message.c_str());
    return 2;
  }
  if (auto r = obs::init_logging(st.opts.log); !r) {
    std::fprintf(stderr, "sluice serve: %s\n", r.err().message.c_str());
    return 2;
  }
  return 0;
}

// A supervisor and its worker processes (docs/processes.md). Nothing here has started a thread.
int run_supervisor(serve_state& st) {
  if (auto r = app::prepare_generation(st.opts); !r) {
    std::fprintf(stderr, "sluice serve: %s\n", r.err().message.c_str());
    return 2;
  }
  app::supervisor_settings settings;
  settings.reload = [&st] { return load_again(st); };
  return app::supervise(st.opts, std::move(settings));
}

// The line on stdout that says where the gateway listens, and its log record.
void announce(app::gateway& gw, const tcp::endpoint& ep, const app::serve_options& opts) {
  std::string upstreams;
  for (const auto& u : gw.options().routing.upstreams) {
    if (!upstreams.empty()) upstreams += ", ";
    upstreams += u.name + "=" + u.url;
  }
  std::string admin;
  if (auto a = gw.admin_endpoint()) admin = "; admin " + a->address().to_string() + ":" + std::to_string(a->port());
  std::printf("sluice serve listening on %s:%u (upstream %s%s)\n", ep.address().to_string().c_str(),
              static_cast<unsigned>(ep.port()), upstreams.c_str(), admin.c_str());
  std::fflush(stdout);
  runtime::notify_service("READY=1");
  obs::log_info("sluice serve started",
                {{"listen", std::string_view(opts.http.listen)},
                 {"port", static_cast<std::uint64_t>(ep.port())},
                 {"threads", static_cast<std::uint64_t>(opts.http.threads)},
                 {"max_streams", opts.admission.max_streams},
                 {"memory_budget_bytes", gw.budget().budget()}});
}

// One process has no second generation to start: SIGHUP (systemd's ExecReload, a config
// reloader) is said to be ignored instead of ending the process, as its default action would.
void ignore_hangups(net::signal_set& hup) {
  hup.async_wait([&hup](const error_code& ec, int) {
    if (ec) return;
    obs::log_warn("SIGHUP ignored: reloading the config needs --processes 2 or more (docs/processes.md)");
    ignore_hangups(hup);
  });
}

// The signals one process handles, caught from before it starts serving (and so before it tells a
// service manager READY=1): a SIGTERM or SIGHUP that arrives early waits in the sets.
struct process_signals {
  net::io_context ctx{1};
  net::signal_set stop{ctx, SIGINT, SIGTERM};
  net::signal_set hup{ctx, SIGHUP};
};

// SIGTERM or SIGINT: drain (readiness fails, serve on for drain-delay, stop accepting, let streams
// finish for up to drain-timeout, end the rest in-band). A second signal stops at once.
void drain_on_signal(app::gateway& gw, process_signals& sig) {
  ignore_hangups(sig.hup);
  sig.stop.async_wait([&sig](const error_code&, int) { sig.ctx.stop(); });
  sig.ctx.run();
  sig.ctx.restart();
  runtime::notify_service("STOPPING=1");
  sig.stop.async_wait([](const error_code& ec, int) {
    if (!ec) {
      obs::log_warn("second signal: stopping now");
      std::_Exit(0);
    }
  });
  std::thread second([&sig] { sig.ctx.run(); });
  gw.drain();
  sig.stop.cancel();
  sig.hup.cancel();
  second.join();
}

// The packaged /etc/sluice/sluice.yaml is this output (packaging/install.cmake).
int print_config(const serve_state& st) {
  const auto text = config::commented_yaml(
      st.table,
      "sluice serve: every option with its default, commented out. Each key is the flag of the same name\n"
      "(`--max-streams` is `max-streams:`); a flag given on the command line wins over this file.\n"
      "Secrets never go here: keys come from the environment (key-env, redis-password-env).");
  std::fwrite(text.data(), 1, text.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}

int run_serve(serve_state& st) {
  if (st.print_config) return print_config(st);
  if (int code = prepare(st); code != 0) return code;
  if (app::deployment::of(st.opts).supervised()) return run_supervisor(st);
  process_signals signals;
  const char* key = std::getenv(st.opts.upstream.key_env.c_str());
  auto owned = app::gateway::make(st.opts, key ? key : "");
  if (!owned) {
    std::fprintf(stderr, "sluice serve: %s\n", owned.err().message.c_str());
    return 2;
  }
  app::gateway& gw = **owned;
  auto ep = gw.start();
  if (!ep) {
    std::fprintf(stderr, "sluice serve: %s\n", ep.err().message.c_str());
    return 1;
  }
  announce(gw, *ep, st.opts);
  drain_on_signal(gw, signals);  // exit 0 after the drain
  obs::log_info("sluice serve stopped");
  return 0;
}

}  // namespace

command add_serve(CLI::App& root) {
  auto st = std::make_shared<serve_state>();
  CLI::App* app = root.add_subcommand("serve", "run the gateway");
  st->opts.register_options(st->table);
  st->table.register_cli(*app);
  app->add_option("--config", st->config_file, "YAML file with option names as keys (flags win)");
  app->add_flag("--print-config", st->print_config,
                "print a config file with every option commented out at its default, and exit");
  return {app, [st] { return run_serve(*st); }};
}

}  // namespace sluice::cli
