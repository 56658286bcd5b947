#include "http/server.hpp"

#include <sys/socket.h>

#include <boost/asio/post.hpp>
#include <cstdio>
#include <exception>

namespace sluice::http {

namespace {

// Completion of a spawned coroutine: an escaped exception is a bug; report it, never crash the loop.
struct report_exception {
  const char* what;
  void operator()(std::exception_ptr e) const {
    if (!e) return;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      std::fprintf(stderr, "sluice: bug: %s escaped: %s\n", what, ex.what());
    } catch (...) {
      std::fprintf(stderr, "sluice: bug: %s escaped with an unknown exception\n", what);
    }
  }
};

}  // namespace

server::server(net::io_context& ctx, const server_options& opts, request_handler& handler, server_shared& shared)
    : ctx_(ctx), opts_(opts), handler_(handler), shared_(shared), acceptor_(ctx) {}

server::~server() = default;

result<tcp::endpoint> server::listen(const tcp::endpoint& ep) {
  error_code ec;
  acceptor_.open(ep.protocol(), ec);
  if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) {
    int one = 1;
    if (::setsockopt(acceptor_.native_handle(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0)
      ec = error_code(errno, boost::system::system_category());
  }
  if (!ec) acceptor_.bind(ep, ec);
  if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return error::make(errc::internal, "cannot listen on " + ep.address().to_string() + ":" +
                                           std::to_string(ep.port()) + ": " + ec.message());
  }
  return acceptor_.local_endpoint();
}

void server::start() {
  net::co_spawn(ctx_, accept_loop(), report_exception{"accept loop"});
  net::co_spawn(ctx_, watchdog_.run(), report_exception{"watchdog"});
}

void server::stop_accepting() {
  net::post(ctx_, [this] {
    error_code ec;
    acceptor_.close(ec);
  });
}

void server::close_all() {
  net::post(ctx_, [this] {
    closing_ = true;
    error_code ec;
    acceptor_.close(ec);
    watchdog_.stop();
    for (auto& c : connections_) c.close();  // each session then ends promptly
  });
}

task<void> server::accept_loop() {
  while (acceptor_.is_open()) {
    error_code ec;
    tcp::socket socket = co_await acceptor_.async_accept(ec_out(ec));
    if (ec) {
      if (ec == net::error::operation_aborted || !acceptor_.is_open()) break;
      // EMFILE and friends: back off briefly instead of spinning.
      net::steady_timer t(ctx_);
      t.expires_after(std::chrono::milliseconds(50));
      co_await t.async_wait(ec_out(ec));
      continue;
    }
    if (shared_.open_connections.load(std::memory_order_relaxed) >= opts_.max_connections) {
      shared_.refused_connections.fetch_add(1, std::memory_order_relaxed);
      socket.close(ec);
      continue;
    }
    net::co_spawn(ctx_, session(std::move(socket)), report_exception{"session"});
  }
}

task<void> server::session(tcp::socket socket) {
  shared_.open_connections.fetch_add(1, std::memory_order_relaxed);
  struct release {
    server_shared& s;
    ~release() { s.open_connections.fetch_sub(1, std::memory_order_relaxed); }
  } release_guard{shared_};

  auto conn = std::make_unique<connection>(std::move(socket), opts_);
  watchdog_.add(*conn);
  connections_.push_back(*conn);
  while (conn->is_open() && !closing_) {
    auto req = co_await conn->read_request();
    if (!req) {
      if (req.err().code != errc::cancelled) co_await handler_.reject(req.err(), *conn);
      break;
    }
    bool keep = co_await handler_.handle(std::move(*req), *conn);
    if (!keep) break;
  }
  conn->close();
}

}  // namespace sluice::http
