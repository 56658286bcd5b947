#include "app/gateway.hpp"

#include <boost/asio/ip/address.hpp>

#include "config/option_table.hpp"

namespace sluice::app {

namespace {
std::size_t thread_count(const serve_options& o) {
  return o.http.threads == 0 ? runtime::default_threads() : static_cast<std::size_t>(o.http.threads);
}
}  // namespace

gateway::gateway(serve_options opts, std::string upstream_key)
    : opts_(std::move(opts)), pool_(thread_count(opts_)) {
  auto target = upstream::parse_url(opts_.upstream.url);
  if (!target) throw std::invalid_argument(target.err().message);
  if (target->tls) tls_ = upstream::make_tls_context();
  shared_ = std::make_unique<proxy::shared_config>(proxy::shared_config{
      opts_.proxy, opts_.upstream, *target, upstream_key.empty() ? std::string() : "Bearer " + upstream_key});
  for (std::size_t i = 0; i < pool_.size(); ++i) {
    auto& ctx = pool_.context(i);
    worker w;
    w.handler = std::make_unique<proxy::handler>(ctx.get_executor(), *shared_, tls_.get());
    w.server = std::make_unique<http::server>(ctx, opts_.http, *w.handler, server_shared_);
    workers_.push_back(std::move(w));
  }
}

gateway::~gateway() { stop(); }

result<tcp::endpoint> gateway::start() {
  auto hp = config::parse_host_port(opts_.http.listen);
  if (!hp) return std::move(hp).err();
  error_code ec;
  auto addr = net::ip::make_address(hp->host, ec);
  if (ec) return error::make(errc::bad_request, "listen: '" + hp->host + "' is not an IP address");
  tcp::endpoint ep{addr, hp->port};
  tcp::endpoint bound;
  for (auto& w : workers_) {
    auto r = w.server->listen(ep);
    if (!r) return std::move(r).err();
    bound = *r;
    ep.port(bound.port());  // port 0: every other thread joins the port the first one got
  }
  runtime::raise_fd_limit();
  for (auto& w : workers_) w.server->start();
  pool_.start();
  started_ = true;
  return bound;
}

void gateway::stop() {
  if (stopped_) return;
  stopped_ = true;
  if (started_) {
    for (auto& w : workers_) w.server->close_all();
    pool_.release();
    // Every session notices its closed socket at once; give them a moment to unwind cleanly.
    if (!pool_.wait_for(std::chrono::seconds(5))) pool_.stop();
    pool_.join();
  }
  workers_.clear();
}

}  // namespace sluice::app
