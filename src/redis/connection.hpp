// redis::connection: one socket to one Redis server (TCP, or TLS for rediss://) carrying many
// commands at once, pipelined. Callers' commands go into an outbox; one writer coroutine sends all
// that is queued in one write; one reader coroutine parses replies (hiredis' reader as the codec)
// and completes the oldest unanswered command, in order (Redis answers in order). Each command has
// a deadline; a bounded number may be unanswered at once (one more fails at once, overloaded: no
// queue grows). On a drop every unanswered command fails with `disconnected` and the connection is
// remade after a full-jitter backoff; AUTH, SELECT and SCRIPT LOAD of the registered scripts run
// before commands flow again. Commands sent while not connected fail at once (disconnected).
//
// Threading: one connection per worker thread. Everything (start, stop, command, run) is called
// from the connection's executor, which must be single-threaded (an io_context run by one thread).
// Lifetime: shared; its own coroutines hold it. stop() before the executor stops.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <array>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>

#include "redis/connection_types.hpp"
#include "redis/metrics.hpp"
#include "redis/options.hpp"
#include "redis/reply.hpp"
#include "redis/script.hpp"
#include "runtime/asio.hpp"
#include "runtime/task_group.hpp"

namespace sluice::redis {

namespace ssl = boost::asio::ssl;

class connection : public std::enable_shared_from_this<connection> {
 public:
  using clock = std::chrono::steady_clock;

  // `scripts` are loaded at every connect and run by index with run(). `m` may be null (tests);
  // several connections may share one. `tls` is needed for rediss:// and must outlive the
  // connection (the composition root owns one context for every TLS client).
  connection(net::any_io_executor ex, settings s, std::vector<script> scripts, std::shared_ptr<metrics> m,
             ssl::context* tls = nullptr);
  ~connection();
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  // Starts the connect / reconnect loop as a task of `owner` (which must outlive it).
  void start(runtime::task_group& owner);
  // Fails every unanswered command (disconnected), closes the socket and ends the loop. Idempotent.
  void stop();

  // One command, e.g. command("SET", key, value). The arguments are copied (encoded) before this
  // returns, so they need not outlive the returned task. (Variadic rather than an initializer list:
  // GCC 12 cannot hold a braced list's array across a co_await in the caller.)
  task<response> command(std::span<const std::string_view> args);
  template <class... Args>
  requires(sizeof...(Args) > 0 && (std::is_convertible_v<const Args&, std::string_view> && ...))
  task<response> command(const Args&... args) {
    const std::array<std::string_view, sizeof...(Args)> a{std::string_view(args)...};
    return command(std::span<const std::string_view>(a));
  }
  // Registered script `index` by EVALSHA; on NOSCRIPT (a flushed or restarted server) once more by
  // EVAL, within the same deadline. Arguments are copied before this returns.
  task<response> run(std::size_t index, std::span<const std::string_view> keys, std::span<const std::string_view> args);
  // command() and run() with a deadline of their own instead of the connection's
  // (`redis-command-timeout`, sized for admission decisions): the job queue's commands may wait
  // longer in a burst than a request's admission should.
  task<response> command_within(duration timeout, std::span<const std::string_view> args);
  template <class... Args>
  requires(sizeof...(Args) > 0 && (std::is_convertible_v<const Args&, std::string_view> && ...))
  task<response> command_within(duration timeout, const Args&... args) {
    const std::array<std::string_view, sizeof...(Args)> a{std::string_view(args)...};
    return command_within(timeout, std::span<const std::string_view>(a));
  }
  task<response> run_within(duration timeout, std::size_t index, std::span<const std::string_view> keys,
                            std::span<const std::string_view> args);

  // A connection that SUBSCRIBEs (one channel per command: a reply each) hands the messages it
  // receives ("message", channel, payload) to `f`, on its executor; nothing else may be sent on it
  // but (UN)SUBSCRIBE and PING. Set before start().
  void on_message(std::function<void(std::string_view channel, std::string_view payload)> f) { on_message_ = std::move(f); }

  bool connected() const noexcept { return connected_; }
  // Commands queued or written and not yet answered (timed-out ones still count until answered).
  std::size_t in_flight() const noexcept { return outbox_.size() + sent_.size(); }
  std::uint64_t connects() const noexcept { return connects_; }  // successful connects so far
  const std::vector<script>& scripts() const noexcept { return scripts_; }
  const settings& config() const noexcept { return settings_; }
  const net::any_io_executor& executor() const noexcept { return ex_; }

 private:
  struct pending;
  using pending_ptr = std::shared_ptr<pending>;

  task<void> run_loop();
  // run_loop()'s steps: open() with an exception as a failed connect; a failed connect's socket
  // closed, backoff chosen and log line; a success's count and log line; a connection served until
  // it drops (the writer spawned, then gone), returning why; the wait between connects.
  task<bool> try_open(std::string& why);
  duration on_connect_failed(const std::string& where, const std::string& why, bool failing);
  void on_connected(const std::string& where, std::uint64_t failed);
  task<std::string> serve();
  task<void> back_off(duration delay);
  // One attempt to connect (connection_open.cpp), in steps: resolve and TCP connect; TLS for
  // rediss://; the preamble written and its replies checked.
  task<bool> open(std::string& why);
  task<bool> connect_socket(std::string& why);
  task<bool> start_tls(std::string& why);
  task<bool> send_preamble(std::string& why);
  task<std::string> read_loop();
  task<void> write_loop();
  task<response> submit(std::string bytes, clock::time_point deadline);
  task<response> counted(std::string bytes, std::size_t label, duration timeout);
  task<response> run_script(std::size_t index, std::vector<std::string> argv, std::size_t keys, duration timeout);
  task<std::size_t> read_some(error_code& ec);
  task<void> write_all(const std::string& bytes, error_code& ec);

  void complete(pending& p, outcome o, reply r);
  void fail_all(outcome first, outcome rest);
  void set_connected(bool up);
  void close_socket() noexcept;
  void check_stall();
  void finished(std::size_t label, outcome o, clock::time_point started);
  tcp::socket& lowest() noexcept;
  duration next_backoff();

  net::any_io_executor ex_;
  settings settings_;
  std::vector<script> scripts_;
  std::shared_ptr<metrics> metrics_;
  ssl::context* tls_context_;
  runtime::task_group* owner_ = nullptr;

  tcp::resolver resolver_;
  tcp::socket socket_;                                // plain connections
  std::unique_ptr<ssl::stream<tcp::socket>> tls_;     // rediss:// connections
  net::steady_timer wake_;         // the writer waits here for an outbox
  net::steady_timer writer_exit_;  // the loop waits here for the writer to leave
  net::steady_timer backoff_;      // between connect attempts
  net::steady_timer open_guard_;   // the deadline of open()
  reply_parser parser_;
  std::function<void(std::string_view, std::string_view)> on_message_;
  std::deque<pending_ptr> outbox_;  // queued, not yet written
  std::deque<pending_ptr> sent_;    // written, awaiting a reply (in order)
  std::vector<char> read_buffer_;
  std::minstd_rand rng_;

  std::string_view drop_reason_;  // why this side closed a live socket (for the log line)
  std::uint64_t epoch_ = 0;  // one per open(): a late guard expiry cannot close the next socket
  unsigned attempt_ = 0;     // failed connects in a row
  std::uint64_t connects_ = 0;
  bool started_ = false;
  bool stopping_ = false;
  bool connected_ = false;
  bool opening_ = false;
  bool writer_running_ = false;
};

}  // namespace sluice::redis
