// Internals of loadgen::run shared by run.cpp (set-up, sampling, merge) and stream.cpp (the
// per-request coroutine). A thread_state belongs to one worker thread and is touched only there
// until the pool has joined; run_state is immutable during the run except for its atomics.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/steady_timer.hpp>

#include "loadgen/histogram.hpp"
#include "loadgen/loadgen.hpp"
#include "loadgen/stream_check.hpp"
#include "loadgen/target.hpp"
#include "runtime/asio.hpp"

namespace sluice::loadgen::detail {

enum class outcome { ok, abandoned_ok, connect, status, truncated, malformed, error_event, timeout };

struct run_state {
  options opt;
  tcp::endpoint endpoint;
  std::string request;          // the whole request, head and body, sent as is by every stream
  std::uint64_t total = 0;      // requests to issue
  std::uint64_t workers = 0;    // concurrent request loops
  clock::time_point start, deadline;

  std::atomic<std::uint64_t> next{0};        // next request number to claim
  std::atomic<std::int64_t> open{0};         // connected streams right now, all threads
  std::atomic<std::int64_t> peak_open{0};
  std::atomic<std::uint64_t> running{0};     // workers not yet finished
  std::mutex mutex;                          // with `done`: wakes the sampling thread at the end
  std::condition_variable done;

  void worker_finished();
};

// Per-thread results; merged into the report after the threads have joined.
struct thread_stats {
  std::uint64_t ok = 0, abandoned_ok = 0, connect = 0, status = 0, truncated = 0, malformed = 0,
                error_event = 0, timeout = 0, retry_after = 0, chunks = 0, bytes = 0;
  std::map<int, std::uint64_t> status_counts;
  histogram ttft, gap, e2e;
  std::vector<std::string> failure_samples;  // at most max_failure_samples

  void count(outcome o, std::string_view why);
  static constexpr std::size_t max_failure_samples = 8;
};

// Live counters for the progress line: written by the owning thread, read by the sampler.
struct alignas(64) live_counters {
  std::atomic<std::uint64_t> finished{0}, failed{0}, chunks{0};
};

// A request or a ramp wait in progress; linked into its thread's list so the run deadline can
// close every socket and cancel every timer at once. Lives in the coroutine frame.
struct thread_state;
struct slot {
  slot(thread_state& ts, tcp::socket* sock, net::steady_timer* timer);
  ~slot();
  slot(const slot&) = delete;
  slot& operator=(const slot&) = delete;

  thread_state& ts;
  tcp::socket* sock;
  net::steady_timer* timer;
  slot* prev = nullptr;
  slot* next = nullptr;
};

struct thread_state {
  explicit thread_state(net::io_context& ctx) : ioc(&ctx) { deadline_timer.emplace(ctx); }

  net::io_context* ioc;
  // Reset by run() before the io_context dies; the thread_state itself outlives the pool.
  std::optional<net::steady_timer> deadline_timer;
  bool stopping = false;              // the run deadline passed: no new requests, open ones time out
  std::uint64_t workers_left = 0;
  std::uint64_t in_flight = 0;        // requests started and not yet counted
  std::uint64_t next_source = 0;      // --source-ips: the next connection's source address
  slot* slots = nullptr;
  std::exception_ptr crash;           // a bug escaped a worker
  thread_stats stats;
  live_counters live;
  json_scratch json;
  // Shared read buffers: a stream reads only after the socket is readable and processes the
  // bytes before it yields, so one pair per thread serves every stream on it.
  std::array<char, 16 * 1024> read_buf{};
  std::array<char, 16 * 1024> body_buf{};

  // Deadline: stop starting requests, close every open socket, cancel every wait.
  void expire();
  void worker_finished();
};

// Loops claiming request numbers until the total is reached or the deadline passes.
// Spawned once per worker with arguments by value; both pointers outlive the io_context's work.
task<void> worker(thread_state* ts, run_state* rs, std::uint64_t index);

// Builds the request bytes from the options (validated) and the parsed target.
std::string build_request(const options& opt, const target_url& t);

}  // namespace sluice::loadgen::detail
