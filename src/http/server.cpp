#include "http/server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <future>

#include "observability/log.hpp"
#include "runtime/unique_fd.hpp"
#include "runtime/loop_pool.hpp"

namespace sluice::http {

namespace {

// How long the accept loop pauses after a failed accept(). The listener stays readable while the
// cause lasts (a connection waits in the backlog), so retrying at once would spin a core.
constexpr auto accept_backoff = std::chrono::milliseconds(50);
constexpr auto accept_warning_interval = std::chrono::seconds(1);
// A worker over its share of the pod's connections looks again this often whether it still is.
constexpr auto share_check = std::chrono::milliseconds(5);
// ... and takes a connection anyway once the listener has had one waiting at this many checks in a
// row: the other workers are not taking it (stalled, or busy), and a waiting client is worse than
// an uneven spread.
constexpr unsigned share_patience = 4;

// Whether a connection waits in the listening socket's queue (its own or the pod's).
bool connection_waiting(int listener) {
  pollfd p{listener, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0;
}

bool out_of_descriptors(const error_code& ec) {
  if (ec.category() != boost::system::system_category()) return false;
  int v = ec.value();
  return v == EMFILE || v == ENFILE || v == ENOBUFS || v == ENOMEM;
}

}  // namespace

server::server(net::io_context& ctx, const server_options& opts, request_handler& handler, server_shared& shared)
    : ctx_(ctx),
      opts_(opts),
      handler_(handler),
      shared_(shared),
      acceptor_(ctx),
      tasks_("http server", [](std::string_view group, std::string_view task, std::string_view what) {
        obs::log_error("bug: a coroutine let an exception escape",
                       {{"group", group}, {"task", task}, {"error", what}});
      }) {}

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

result<tcp::endpoint> server::adopt(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    return error::make(errc::internal, std::string("inherited listener: ") + std::strerror(errno));
  runtime::unique_fd copy(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
  if (!copy) return error::make(errc::internal, std::string("inherited listener: ") + std::strerror(errno));
  error_code ec;
  acceptor_.assign(addr.ss_family == AF_INET6 ? tcp::v6() : tcp::v4(), copy.get(), ec);
  if (ec) return error::make(errc::internal, "inherited listener: " + ec.message());  // `copy` closes it
  copy.release();  // the acceptor's now
  auto ep = acceptor_.local_endpoint(ec);
  if (ec) return error::make(errc::internal, "inherited listener: " + ec.message());
  return ep;
}

void server::start() {
  const std::uint64_t fd_limit = runtime::fd_soft_limit();
  const std::uint64_t cap = effective_max_connections(opts_.max_connections, fd_limit);
  std::uint64_t unset = 0;
  if (shared_.max_connections.compare_exchange_strong(unset, cap)) {  // the first server logs it
    if (opts_.max_connections == 0) {
      obs::log_info("max-connections derived from the descriptor limit",
                    {{"max_connections", cap}, {"fd_limit", fd_limit}});
    } else if (const std::uint64_t fits = effective_max_connections(0, fd_limit); cap > fits) {
      obs::log_warn("max-connections is above what the descriptor limit carries (two per stream): "
                    "accepts and upstream connects may fail with EMFILE",
                    {{"max_connections", cap}, {"fd_limit", fd_limit}, {"fits", fits}});
    } else {
      obs::log_info("max-connections", {{"max_connections", cap}, {"fd_limit", fd_limit}});
    }
  }
  tasks_.spawn(ctx_.get_executor(), accept_loop(), "accept loop");
  tasks_.spawn(ctx_.get_executor(), watchdog_.run(), "watchdog");
}

void server::stop_accepting() {
  net::post(ctx_, [this] {
    error_code ec;
    acceptor_.close(ec);
  });
}

void server::stop_accepting_now() {
  std::promise<void> closed;
  auto done = closed.get_future();
  net::post(ctx_, [this, &closed] {
    error_code ec;
    acceptor_.close(ec);
    closed.set_value();
  });
  done.wait();
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
    if (shared_.over_share && !co_await wait_for_share()) break;
    error_code ec;
    tcp::socket socket = co_await acceptor_.async_accept(ec_out(ec));
    if (ec) {
      if (ec == net::error::operation_aborted || !acceptor_.is_open()) break;
      if (ec == net::error::connection_aborted) continue;  // that client gave up while queued
      note_accept_failure(ec);
      net::steady_timer t(ctx_);
      t.expires_after(accept_backoff);
      co_await t.async_wait(ec_out(ec));
      continue;
    }
    if (!take_slot()) {
      socket.close(ec);
      continue;
    }
    tasks_.spawn(ctx_.get_executor(), session(std::make_unique<connection>(std::move(socket), opts_), connection_slot(shared_)),
                 "session");
  }
}

task<bool> server::wait_for_share() {
  bool paused = false;
  unsigned waiting_seen = 0;
  while (acceptor_.is_open() && shared_.over_share()) {
    if (!paused) shared_.share_pauses.fetch_add(1, std::memory_order_relaxed);
    paused = true;
    waiting_seen = connection_waiting(acceptor_.native_handle()) ? waiting_seen + 1 : 0;
    if (waiting_seen >= share_patience) {
      shared_.share_overrides.fetch_add(1, std::memory_order_relaxed);
      break;
    }
    net::steady_timer t(ctx_);
    t.expires_after(share_check);
    error_code ec;
    co_await t.async_wait(ec_out(ec));
  }
  co_return acceptor_.is_open();
}

void server::note_accept_failure(const error_code& ec) {
  const std::uint64_t failures = shared_.accept_failures.fetch_add(1, std::memory_order_relaxed) + 1;
  const std::int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               runtime::steady::now().time_since_epoch()).count();
  std::int64_t last = shared_.accept_warned_at_ns.load(std::memory_order_relaxed);
  if (last != 0 && now - last < std::chrono::nanoseconds(accept_warning_interval).count()) return;
  if (!shared_.accept_warned_at_ns.compare_exchange_strong(last, now, std::memory_order_relaxed)) return;
  shared_.accept_failures.fetch_sub(failures, std::memory_order_relaxed);
  const std::string error = ec.message();
  const std::uint64_t open = shared_.open_connections.load(std::memory_order_relaxed);
  const std::uint64_t cap = shared_.max_connections.load(std::memory_order_relaxed);
  if (out_of_descriptors(ec)) {
    obs::log_warn("accept failed: out of file descriptors; backing off (lower max-connections or raise the fd limit)",
                  {{"error", error},
                   {"failures", failures},
                   {"open_connections", open},
                   {"max_connections", cap},
                   {"fd_limit", static_cast<std::uint64_t>(runtime::fd_soft_limit())}});
  } else {
    obs::log_warn("accept failed; backing off", {{"error", error}, {"failures", failures}});
  }
}

bool server::take_slot() noexcept {
  // Take the slot first and check after, so that worker threads accepting at once cannot all
  // slip in under the cap.
  const std::uint64_t cap = shared_.max_connections.load(std::memory_order_relaxed);
  if (shared_.open_connections.fetch_add(1, std::memory_order_relaxed) >= cap) {
    shared_.open_connections.fetch_sub(1, std::memory_order_relaxed);
    shared_.refused_connections.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  if (shared_.pod_connections) shared_.pod_connections->fetch_add(1, std::memory_order_relaxed);
  return true;
}

void server::serve_handed(int handed, std::string already_read) {
  net::post(ctx_, [this, fd = runtime::unique_fd(handed), bytes = std::move(already_read)]() mutable {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    if (closing_ || ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0 || !take_slot())
      return;  // `fd` closes it
    tcp::socket socket(ctx_);
    error_code ec;
    socket.assign(addr.ss_family == AF_INET6 ? tcp::v6() : tcp::v4(), fd.get(), ec);
    if (ec) {
      fd.reset();
      connection_slot::give_back(shared_);
      return;
    }
    fd.release();  // the socket's now
    tasks_.spawn(ctx_.get_executor(),
                 session(std::make_unique<connection>(std::move(socket), opts_, bytes), connection_slot(shared_)),
                 "handed session");
  });
}

task<void> server::session(std::unique_ptr<connection> conn, [[maybe_unused]] connection_slot slot) {
  watchdog_.add(*conn);
  connections_.push_back(*conn);
  while (conn->is_open() && !closing_) {
    auto req = co_await conn->read_request(handler_.streamed_bodies());
    if (!req) {
      if (req.err().code != errc::cancelled) {
        co_await handler_.reject(req.err(), *conn);
        // A client that was too slow sends nothing more; any other may still be sending.
        if (req.err().code != errc::request_timeout) co_await conn->linger_close();
      }
      break;
    }
    bool keep = co_await handler_.handle(*req, *conn) && !conn->body_pending();
    if (!keep) {
      // A streamed body refused before its end (a key, a limit): the client may still be sending.
      if (conn->body_pending() && conn->is_open()) co_await conn->linger_close();
      break;
    }
  }
  conn->close();
}

}  // namespace sluice::http
