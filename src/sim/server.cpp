#include "sim/server.hpp"

#include <boost/asio/post.hpp>

#include <algorithm>

#include "sim/worker.hpp"

namespace sluice::sim {
namespace {

using reuse_port = net::detail::socket_option::boolean<SOL_SOCKET, SO_REUSEPORT>;

result<net::ip::address> resolve_host(const std::string& host) {
  error_code ec;
  auto addr = net::ip::make_address(host, ec);
  if (!ec) return addr;
  net::io_context tmp;
  tcp::resolver resolver(tmp);
  auto found = resolver.resolve(host, "", ec);
  if (ec || found.empty()) return error::make(errc::bad_request, "cannot resolve listen host '" + host + "'");
  return found.begin()->endpoint().address();
}

result<void> open_listener(tcp::acceptor& a, const tcp::endpoint& ep) {
  error_code ec;
  a.open(ep.protocol(), ec);
  if (!ec) a.set_option(net::socket_base::reuse_address(true), ec);
  // One listener per worker on the same port: the kernel spreads new connections across them.
  if (!ec) a.set_option(reuse_port(true), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(4096, ec);
  if (ec) return error::make(errc::internal, "cannot listen on " + ep.address().to_string() + ":" +
                                                 std::to_string(ep.port()) + ": " + ec.message());
  return ok;
}

}  // namespace

void counters::count_status(unsigned status) noexcept {
  if (status >= 200 && status < 300) inc(responses_2xx);
  else if (status >= 400 && status < 500) inc(responses_4xx);
  else if (status >= 500) inc(responses_5xx);
  if (status == 429) inc(responses_429);
}

void counters::note_timer_wakeup(std::chrono::steady_clock::duration late) noexcept {
  const auto us = static_cast<std::uint64_t>(std::max<std::int64_t>(
      0, std::chrono::duration_cast<std::chrono::microseconds>(late).count()));
  inc(timer_waits);
  if (us > 1000) inc(timer_late_1ms);
  if (us > 10'000) inc(timer_late_10ms);
  if (us > 100'000) inc(timer_late_100ms);
  timer_late_sum_us.fetch_add(us, std::memory_order_relaxed);
  // One writer per worker (its thread), so a plain load and store keep the maximum.
  if (us > timer_late_max_us.load(std::memory_order_relaxed)) timer_late_max_us.store(us, std::memory_order_relaxed);
}

connection::connection(tcp::socket s, worker& w) : socket(std::move(s)), owner(w) {
  w.connections.push_back(*this);
  counters::inc(w.count.active_connections);
}

connection::~connection() { counters::dec(owner.count.active_connections); }

worker::worker(net::io_context& c, std::size_t i, const options& o, server::state& s, counters& n)
    : ctx(c), index(i), opts(o), shared(s), count(n), acceptor(c),
      held_streams(c, net::steady_timer::time_point::max()), fault_rng(o.seed * 0x2545f4914f6cdd1dull + i + 1) {}

double worker::next_uniform() noexcept {
  std::uint64_t z = (fault_rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

void worker::close_all() {
  stopping = true;
  error_code ec;
  acceptor.close(ec);
  // Closing a socket completes its pending read; every wait in a session runs beside such a read,
  // so each session ends promptly and unlinks itself.
  for (auto& c : connections) c.socket.close(ec);
}

stats server::state::snapshot() const {
  stats s;
  for (const auto& cp : counts) {
    const auto& c = *cp;
    auto get = [](const counters::counter& x) { return x.load(std::memory_order_relaxed); };
    s.requests += get(c.requests);
    s.streams_started += get(c.streams_started);
    s.streams_completed += get(c.streams_completed);
    s.streams_aborted += get(c.streams_aborted);
    s.active_streams += get(c.active_streams);
    s.peak_active_streams += get(c.peak_active_streams);
    s.active_connections += get(c.active_connections);
    s.connections_accepted += get(c.connections_accepted);
    s.responses_2xx += get(c.responses_2xx);
    s.responses_4xx += get(c.responses_4xx);
    s.responses_5xx += get(c.responses_5xx);
    s.responses_429 += get(c.responses_429);
    s.requests_with_auth += get(c.requests_with_auth);
    s.faults_injected += get(c.faults_injected);
    s.completion_requests += get(c.completion_requests);
    for (std::size_t i = 0; i < api_count; ++i) s.completion_requests_by_api[i] += get(c.completion_requests_by_api[i]);
    s.completions_running += get(c.completions_running);
    s.completions_succeeded += get(c.completions_succeeded);
    s.rate_limited += get(c.rate_limited);
    s.azure_requests += get(c.azure_requests);
    s.files_stored += get(c.files_stored);
    s.upload_bytes += get(c.upload_bytes);
    s.download_bytes += get(c.download_bytes);
    s.uploads_aborted += get(c.uploads_aborted);
    s.realtime_sessions += get(c.realtime_sessions);
    s.realtime_open += get(c.realtime_open);
    s.realtime_messages_in += get(c.realtime_messages_in);
    s.realtime_messages_out += get(c.realtime_messages_out);
    s.realtime_closed_by_client += get(c.realtime_closed_by_client);
    s.realtime_audio_bytes += get(c.realtime_audio_bytes);
    s.timer_waits += get(c.timer_waits);
    s.timer_late_1ms += get(c.timer_late_1ms);
    s.timer_late_10ms += get(c.timer_late_10ms);
    s.timer_late_100ms += get(c.timer_late_100ms);
    s.timer_late_sum_us += get(c.timer_late_sum_us);
    s.timer_late_max_us = std::max(s.timer_late_max_us, get(c.timer_late_max_us));
  }
  s.file_store_bytes = files.kept_bytes();
  s.stored_objects = objects.objects();
  s.stored_object_bytes = objects.bytes();
  s.objects_evicted = objects.evicted();
  return s;
}

task<void> accept_loop(worker* w) {
  for (;;) {
    error_code ec;
    tcp::socket sock = co_await w->acceptor.async_accept(ec_out(ec));
    if (w->stopping || !w->acceptor.is_open()) co_return;
    if (ec) {
      // Out of descriptors or a transient network error: back off briefly instead of spinning.
      net::steady_timer t(w->ctx, std::chrono::milliseconds(10));
      co_await t.async_wait(ec_out(ec));
      continue;
    }
    sock.set_option(tcp::no_delay(true), ec);
    counters::inc(w->count.connections_accepted);
    w->tasks.spawn(w->ctx.get_executor(), run_session(std::move(sock), w), "session");
  }
}

server::server(options opts) : state_(std::make_unique<state>(std::move(opts))) {}

server::~server() { stop(); }

result<tcp::endpoint> server::start() {
  auto& st = *state_;
  if (st.running) return st.bound;
  if (auto v = st.opts.validate(); !v) return std::move(v).err();
  auto hp = config::parse_host_port(st.opts.listen);
  if (!hp) return std::move(hp).err();
  auto addr = resolve_host(hp->host);
  if (!addr) return std::move(addr).err();

  st.limiter.reset();
  if (st.opts.limit_rpm > 0 || st.opts.limit_tpm > 0)
    st.limiter = std::make_unique<rate_limiter>(st.opts.limit_rpm, st.opts.limit_tpm, std::chrono::steady_clock::now());
  st.pool = std::make_unique<runtime::loop_pool>(st.opts.threads);
  st.workers.clear();
  st.counts.clear();
  tcp::endpoint ep(*addr, hp->port);
  for (std::size_t i = 0; i < st.pool->size(); ++i) {
    st.counts.push_back(std::make_unique<counters>());
    auto w = std::make_unique<worker>(st.pool->context(i), i, st.opts, st, *st.counts.back());
    if (auto r = open_listener(w->acceptor, ep); !r) {
      st.workers.clear();
      st.pool.reset();
      return std::move(r).err();
    }
    // Port 0 is resolved by the first listener; the others join it on the same port.
    if (i == 0) ep = w->acceptor.local_endpoint();
    st.workers.push_back(std::move(w));
  }
  st.bound = ep;
  for (auto& w : st.workers) w->tasks.spawn(w->ctx.get_executor(), accept_loop(w.get()), "accept loop");
  st.pool->start();
  st.running = true;
  return ep;
}

void server::stop() {
  auto& st = *state_;
  if (!st.running) return;
  st.running = false;
  for (auto& w : st.workers) net::post(w->ctx, [p = w.get()] { p->close_all(); });
  // Without the work guards each thread returns once its sessions have ended.
  st.pool->release();
  st.pool->join();
  st.workers.clear();  // acceptors before their io_contexts
  st.pool.reset();
}

stats server::snapshot() const { return state_->snapshot(); }

std::uint16_t server::port() const { return state_->bound.port(); }

result<void> server::state::apply_control(control_update u) {
  const bool may_resume = u.clear || u.paused == false;
  auto applied = control.apply(std::move(u));
  // A held stream rechecks the flag when woken, so waking one still paused is harmless; the flag is
  // stored before the post, so a stream that checks it after the cancel has run sees it clear.
  if (applied && may_resume)
    for (auto& w : workers) net::post(w->ctx, [p = w.get()] { p->held_streams.cancel(); });
  return applied;
}

result<void> server::control(std::string_view json_body) {
  auto u = parse_control(json_body, state_->opts);
  if (!u) return std::move(u).err();
  return state_->apply_control(std::move(*u));
}

std::size_t server::script_remaining() const { return state_->control.script_remaining(); }

}  // namespace sluice::sim
