#include "redis/connection.hpp"

#include <openssl/ssl.h>

#include <algorithm>

#include <boost/asio/connect.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/write.hpp>

#include "observability/log.hpp"
#include "redis/backoff.hpp"

namespace sluice::redis {

namespace {

constexpr std::size_t read_chunk = 16 * 1024;
constexpr std::size_t keep_batch_capacity = 64 * 1024;

bool starts_with(std::string_view s, std::string_view prefix) noexcept {
  return s.substr(0, prefix.size()) == prefix;
}

long long millis(duration d) noexcept { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); }

}  // namespace

// One command from submit() to its reply. The caller waits on `timer` (expiring at the deadline);
// complete() fills `result`, sets `done` and cancels the timer. A caller that stopped waiting
// (deadline, cancellation) marks it abandoned: its reply, when it comes, is read and dropped.
struct connection::pending {
  explicit pending(const net::any_io_executor& ex) : timer(ex) {}
  net::steady_timer timer;
  std::string bytes;  // until written
  clock::time_point written_at{};
  response result;
  bool done = false;
  bool abandoned = false;
};

connection::connection(net::any_io_executor ex, settings s, std::vector<script> scripts, std::shared_ptr<metrics> m,
                       ssl::context* tls)
    : ex_(std::move(ex)),
      settings_(std::move(s)),
      scripts_(std::move(scripts)),
      metrics_(std::move(m)),
      tls_context_(tls),
      resolver_(ex_),
      socket_(ex_),
      wake_(ex_),
      writer_exit_(ex_),
      backoff_(ex_),
      open_guard_(ex_),
      read_buffer_(read_chunk),
      rng_(std::random_device{}()) {}

connection::~connection() = default;

void connection::start(runtime::task_group& owner) {
  if (started_) return;
  started_ = true;
  owner_ = &owner;
  owner.spawn(ex_, run_loop(), "redis connection");
}

void connection::stop() {
  if (stopping_) return;
  stopping_ = true;
  resolver_.cancel();
  close_socket();
  backoff_.cancel();
  open_guard_.cancel();
  wake_.cancel();
  fail_all(outcome::disconnected, outcome::disconnected);
}

tcp::socket& connection::lowest() noexcept { return tls_ ? tls_->next_layer() : socket_; }

void connection::close_socket() noexcept {
  error_code ignored;
  lowest().shutdown(tcp::socket::shutdown_both, ignored);
  lowest().close(ignored);
}

void connection::set_connected(bool up) {
  if (up == connected_) return;
  connected_ = up;
  if (metrics_) metrics_->connected(up);
}

duration connection::next_backoff() {
  return backoff_delay(settings_.backoff_min, settings_.backoff_max, attempt_, rng_);
}

// ---- the connection's life: connect, serve, drop, back off, again ---------------------------------

task<void> connection::run_loop() {
  auto self = shared_from_this();
  const std::string where = settings_.server.to_string();
  bool failing = false;  // a run of failed connects is logged once at warn, then at debug
  std::uint64_t failed = 0;  // connects failed since the last success
  while (!stopping_) {
    std::string why;
    const bool up = co_await try_open(why);
    if (stopping_) break;
    if (!up) {
      const duration delay = on_connect_failed(where, why, failing);
      failing = true;
      ++failed;
      co_await back_off(delay);
      continue;
    }
    on_connected(where, failed);
    failed = 0;
    failing = false;
    const std::string reason = co_await serve();
    if (stopping_) break;
    const duration delay = next_backoff();
    ++attempt_;
    obs::log_warn("redis disconnected", {{"redis", where}, {"reason", reason}, {"retry_in_ms", millis(delay)}});
    co_await back_off(delay);
  }
  set_connected(false);
  close_socket();
  fail_all(outcome::disconnected, outcome::disconnected);
  if (connects_ > 0) obs::log_info("redis connection stopped", {{"redis", where}});
}

task<bool> connection::try_open(std::string& why) {
  try {
    co_return co_await open(why);
  } catch (const std::exception& e) {  // e.g. OpenSSL cannot make a session: a failed connect
    why = e.what();
  }
  co_return false;
}

duration connection::on_connect_failed(const std::string& where, const std::string& why, bool failing) {
  close_socket();
  const duration delay = next_backoff();
  ++attempt_;
  const obs::log_level level = failing ? obs::log_level::debug : obs::log_level::warn;
  if (obs::log_enabled(level)) {
    const obs::log_field fields[] = {{"redis", where}, {"reason", why}, {"attempt", attempt_},
                                     {"retry_in_ms", millis(delay)}};
    obs::log_event(level, "redis connect failed", fields);
  }
  return delay;
}

void connection::on_connected(const std::string& where, std::uint64_t failed) {
  ++connects_;
  drop_reason_ = {};
  obs::log_info("redis connected", {{"redis", where}, {"failed_attempts", failed}, {"connects", connects_},
                                    {"scripts", scripts_.size()}});
  attempt_ = 0;
}

task<std::string> connection::serve() {
  set_connected(true);
  writer_running_ = true;
  owner_->spawn(ex_, write_loop(), "redis writer");

  std::string reason = co_await read_loop();

  set_connected(false);
  close_socket();
  wake_.cancel();
  fail_all(outcome::disconnected, outcome::disconnected);
  while (writer_running_) {
    writer_exit_.expires_at(clock::time_point::max());
    error_code ec;
    co_await writer_exit_.async_wait(ec_out(ec));
  }
  co_return reason;
}

task<void> connection::back_off(duration delay) {
  backoff_.expires_after(delay);
  error_code ec;
  co_await backoff_.async_wait(ec_out(ec));
}

// ---- reading and writing -------------------------------------------------------------------------

task<std::size_t> connection::read_some(error_code& ec) {
  if (tls_) co_return co_await tls_->async_read_some(net::buffer(read_buffer_), ec_out(ec));
  co_return co_await socket_.async_read_some(net::buffer(read_buffer_), ec_out(ec));
}

task<void> connection::write_all(const std::string& bytes, error_code& ec) {
  if (tls_) {
    co_await net::async_write(*tls_, net::buffer(bytes), ec_out(ec));
  } else {
    co_await net::async_write(socket_, net::buffer(bytes), ec_out(ec));
  }
}

task<std::string> connection::read_loop() {
  for (;;) {
    // Replies already buffered (read with the preamble) first.
    while (std::optional<reply> r = parser_.next()) {
      if (on_message_ && r->type == reply::kind::array && r->elements.size() == 3 && r->elements[0].str == "message") {
        on_message_(r->elements[1].str, r->elements[2].str);  // a subscription's message: no command's reply
        continue;
      }
      if (sent_.empty()) co_return "protocol error: a reply to no command";
      pending_ptr p = std::move(sent_.front());
      sent_.pop_front();
      if (metrics_) metrics_->in_flight(-1);
      const outcome o = r->is_error() ? outcome::error_reply : outcome::ok;
      complete(*p, o, std::move(*r));
    }
    if (parser_.failed()) {
      if (!sent_.empty()) {
        pending_ptr p = std::move(sent_.front());
        sent_.pop_front();
        if (metrics_) metrics_->in_flight(-1);
        complete(*p, outcome::protocol_error, {});
      }
      fail_all(outcome::disconnected, outcome::disconnected);
      co_return "protocol error: " + parser_.error();
    }
    if (stopping_) co_return "stopped";
    error_code ec;
    const std::size_t n = co_await read_some(ec);
    if (ec) {
      if (ec == net::error::eof) co_return "closed by the server";
      if (!drop_reason_.empty()) co_return std::string(drop_reason_);
      if (ec == net::error::operation_aborted) co_return "closed";
      co_return ec.message();
    }
    parser_.feed(read_buffer_.data(), n);
  }
}

task<void> connection::write_loop() {
  auto self = shared_from_this();
  std::string batch;
  while (connected_ && !stopping_) {
    if (outbox_.empty()) {
      wake_.expires_at(clock::time_point::max());
      error_code ec;
      co_await wake_.async_wait(ec_out(ec));
      continue;
    }
    // Everything queued goes out in one write; commands whose caller stopped waiting are dropped
    // unsent (no reply will come for them).
    batch.clear();
    const auto now = clock::now();
    for (pending_ptr& p : outbox_) {
      if (p->abandoned) {
        if (metrics_) metrics_->in_flight(-1);
        continue;
      }
      batch += p->bytes;
      std::string().swap(p->bytes);
      p->written_at = now;
      sent_.push_back(std::move(p));
    }
    outbox_.clear();
    if (batch.empty()) continue;
    error_code ec;
    co_await write_all(batch, ec);
    if (ec) {
      drop_reason_ = "write failed";
      close_socket();  // the reader ends with the error and the loop remakes the connection
      break;
    }
    if (batch.capacity() > keep_batch_capacity) std::string().swap(batch);
  }
  writer_running_ = false;
  writer_exit_.cancel();
}

// ---- commands ------------------------------------------------------------------------------------

void connection::complete(pending& p, outcome o, reply r) {
  if (p.done) return;
  p.done = true;
  if (p.abandoned) return;  // counted when its caller gave up
  p.result.status = o;
  p.result.value = std::move(r);
  p.timer.cancel();
}

void connection::fail_all(outcome first, outcome rest) {
  bool head = true;
  for (auto* queue : {&sent_, &outbox_}) {
    while (!queue->empty()) {
      pending_ptr p = std::move(queue->front());
      queue->pop_front();
      if (metrics_) metrics_->in_flight(-1);
      complete(*p, head ? first : rest, {});
      head = false;
    }
  }
}

void connection::check_stall() {
  // The oldest unanswered command went out long ago and nothing answered it: the server is hung or
  // gone without TCP noticing. Drop the connection; every pending command fails disconnected.
  if (!connected_ || sent_.empty()) return;
  if (clock::now() - sent_.front()->written_at < settings_.stall_timeout) return;
  obs::log_warn("redis connection stalled", {{"redis", settings_.server.to_string()},
                                              {"unanswered", sent_.size()},
                                              {"stall_timeout_ms", millis(settings_.stall_timeout)}});
  drop_reason_ = "stalled";
  close_socket();
}

task<response> connection::submit(std::string bytes, clock::time_point deadline) {
  auto self = shared_from_this();
  if (!connected_ || stopping_) co_return response{outcome::disconnected, {}};
  if (in_flight() >= settings_.max_in_flight) {
    check_stall();
    co_return response{outcome::overloaded, {}};
  }
  auto p = std::make_shared<pending>(ex_);
  p->bytes = std::move(bytes);
  p->timer.expires_at(deadline);
  outbox_.push_back(p);
  if (metrics_) metrics_->in_flight(1);
  if (outbox_.size() == 1) wake_.cancel();
  error_code ec;
  co_await p->timer.async_wait(ec_out(ec));
  if (p->done) co_return std::move(p->result);
  // The deadline passed (ec == success) or the caller was cancelled (operation_aborted, not done).
  p->abandoned = true;
  if (ec) co_return response{outcome::cancelled, {}};
  check_stall();
  co_return response{outcome::timeout, {}};
}

void connection::finished(std::size_t label, outcome o, clock::time_point started) {
  if (!metrics_) return;
  metrics_->command_done(label, o);
  if (o == outcome::ok || o == outcome::error_reply) {
    metrics_->round_trip(std::chrono::duration<double>(clock::now() - started).count());
  }
}

task<response> connection::counted(std::string bytes, std::size_t label, duration timeout) {
  const auto started = clock::now();
  response r = co_await submit(std::move(bytes), started + timeout);
  finished(label, r.status, started);
  co_return r;
}

task<response> connection::command(std::span<const std::string_view> args) {
  return counted(format_command(args), 0, settings_.command_timeout);
}

task<response> connection::command_within(duration timeout, std::span<const std::string_view> args) {
  return counted(format_command(args), 0, timeout);
}

task<response> connection::run(std::size_t index, std::span<const std::string_view> keys,
                               std::span<const std::string_view> args) {
  return run_within(settings_.command_timeout, index, keys, args);
}

task<response> connection::run_within(duration timeout, std::size_t index, std::span<const std::string_view> keys,
                                      std::span<const std::string_view> args) {
  std::vector<std::string> argv;
  argv.reserve(keys.size() + args.size());
  for (auto k : keys) argv.emplace_back(k);
  for (auto a : args) argv.emplace_back(a);
  return run_script(index, std::move(argv), keys.size(), timeout);
}

task<response> connection::run_script(std::size_t index, std::vector<std::string> argv, std::size_t keys,
                                      duration timeout) {
  const auto started = clock::now();
  if (index >= scripts_.size()) throw std::out_of_range("redis: no script with this index");
  const script& s = scripts_[index];
  const std::string numkeys = std::to_string(keys);
  auto encode = [&](std::string_view verb, std::string_view body) {
    std::vector<std::string_view> a;
    a.reserve(argv.size() + 3);
    a.push_back(verb);
    a.push_back(body);
    a.push_back(numkeys);
    for (const auto& x : argv) a.emplace_back(x);
    return format_command(a);
  };
  const auto deadline = started + timeout;
  response r = co_await submit(encode("EVALSHA", s.sha1), deadline);
  if (r.status == outcome::error_reply && starts_with(r.value.str, "NOSCRIPT")) {
    // The server lost its script cache (SCRIPT FLUSH, a restart between our connect and now, a
    // failover): EVAL sends the source, which also caches it again.
    obs::log_debug("redis script reloaded", {{"script", s.name}});
    r = co_await submit(encode("EVAL", s.source), deadline);
  }
  finished(index + 1, r.status, started);
  co_return r;
}

}  // namespace sluice::redis
