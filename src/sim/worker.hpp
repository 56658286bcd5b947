// Internals of sim::server shared by server.cpp, session.cpp and respond.cpp. A worker is one thread's
// io_context, listener, connections and counters; everything but the counters (atomics, read by
// snapshot() from any thread) is touched only on that worker's thread. The control state and the
// rate limiter in server::state are shared by all threads and guard themselves.
#pragma once

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/intrusive/list.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

#include "runtime/task_group.hpp"
#include "runtime/loop_pool.hpp"
#include "sim/control.hpp"
#include "sim/file_store.hpp"
#include "sim/object_families.hpp"
#include "sim/object_store.hpp"
#include "sim/rate_limit.hpp"
#include "sim/request.hpp"
#include "sim/server.hpp"
#include "sim/uploads.hpp"

namespace sluice::sim {

namespace http = boost::beast::http;

// One worker's counters: written by its thread only, so relaxed atomics never contend; aligned so
// neighbouring workers do not share a cache line.
struct alignas(64) counters {
  using counter = std::atomic<std::uint64_t>;
  counter requests{0}, streams_started{0}, streams_completed{0}, streams_aborted{0}, active_streams{0},
      active_connections{0}, connections_accepted{0}, responses_2xx{0}, responses_4xx{0}, responses_5xx{0},
      responses_429{0}, requests_with_auth{0}, faults_injected{0}, completion_requests{0}, completions_running{0},
      completions_succeeded{0}, rate_limited{0}, azure_requests{0};
  // The large-body routes (sim/media.hpp): files recorded in the store, body bytes read by the
  // streamed uploads, speech and file content bytes sent, streamed uploads whose client left mid-body.
  counter files_stored{0}, upload_bytes{0}, download_bytes{0}, uploads_aborted{0};
  // The Realtime WebSocket (sim/ws_realtime.hpp): sessions accepted, open now, messages read and
  // written, sessions the client ended with a close frame, input audio bytes decoded.
  counter realtime_sessions{0}, realtime_open{0}, realtime_messages_in{0}, realtime_messages_out{0},
      realtime_closed_by_client{0}, realtime_audio_bytes{0};
  // completion_requests by route (indexed by api).
  counter completion_requests_by_api[api_count]{};
  // The most streams this worker had open at once (only its thread writes it).
  counter peak_active_streams{0};
  // Timed waits (time to first token, token delay, header delay) and how late their wakeups came:
  // a worker whose event loop cannot keep up wakes late, so these say whether the simulator itself
  // is what limits a measurement.
  counter timer_waits{0}, timer_late_1ms{0}, timer_late_10ms{0}, timer_late_100ms{0}, timer_late_sum_us{0},
      timer_late_max_us{0};

  static void inc(counter& c) noexcept { c.fetch_add(1, std::memory_order_relaxed); }
  static void dec(counter& c) noexcept { c.fetch_sub(1, std::memory_order_relaxed); }
  void count_status(unsigned status) noexcept;
  // One timed wait that woke `late` after its deadline (only the worker's thread calls it).
  void note_timer_wakeup(std::chrono::steady_clock::duration late) noexcept;
};

using list_hook = boost::intrusive::list_base_hook<boost::intrusive::link_mode<boost::intrusive::auto_unlink>>;

struct worker;

// One accepted connection. Lives in its session coroutine's frame and unlinks itself from the
// worker's list when that frame ends, so stop() can reach every open socket.
struct connection : list_hook {
  connection(tcp::socket s, worker& w);
  ~connection();
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  tcp::socket socket;
  boost::beast::flat_buffer buffer;  // request bytes, including any the peer watcher read early
  worker& owner;
};

struct worker {
  worker(net::io_context& c, std::size_t i, const options& o, server::state& s, counters& n);

  net::io_context& ctx;
  std::size_t index;
  const options& opts;
  server::state& shared;  // control and limiter are thread-safe; the rest is read-only while running
  counters& count;  // owned by server::state so the figures outlive stop()
  tcp::acceptor acceptor;
  // Streams of a paused engine wait on it (it never expires); resuming cancels it, waking them all.
  net::steady_timer held_streams;
  boost::intrusive::list<connection, boost::intrusive::constant_time_size<false>> connections;
  std::uint64_t fault_rng;   // per-thread PRNG state for the fault rates
  bool stopping = false;
  runtime::task_group tasks{"sluice sim"};  // the accept loop and every session; reports a bug once

  double next_uniform() noexcept;  // in [0, 1)
  void close_all();                 // on this worker's thread: listener and every connection
};

struct server::state {
  explicit state(options o) : opts(std::move(o)), files(opts.file_store_bytes) {}
  options opts;
  std::unique_ptr<runtime::loop_pool> pool;
  std::vector<std::unique_ptr<worker>> workers;
  std::vector<std::unique_ptr<counters>> counts;  // one per worker
  tcp::endpoint bound;
  bool running = false;
  control_state control;                  // script and engine values; any thread
  std::unique_ptr<rate_limiter> limiter;  // null when limit-rpm and limit-tpm are off; set before the workers start
  file_store files;                       // POST /v1/files and completed uploads; any thread
  upload_registry uploads;                // the Uploads API's open uploads; any thread
  object_store objects{object_family_tree()};  // batches, vector stores, fine-tuning jobs, conversations; any thread
  stats snapshot() const;
  // Applies a control update; one that may have resumed the engine wakes every worker's held streams.
  result<void> apply_control(control_update u);
};

// The coroutines spawned per listener and per connection (by value: they own their arguments).
task<void> accept_loop(worker* w);
task<void> run_session(tcp::socket socket, worker* w);

// How one response ended, as far as the connection is concerned.
enum class response_end { done, close, peer_gone };

// Serves POST /v1/chat/completions, /v1/completions, /v1/responses and /v1/messages (respond.cpp);
// with a `deployment` (an Azure deployment path), that is the model the answer names.
task<response_end> serve_completion(connection& c, api kind, const http::request<http::string_body>& req,
                                    std::string_view deployment = {});
// Writes a whole response with Content-Length (session.cpp).
task<response_end> write_simple(connection& c, http::response<http::string_body>& res);
// An OpenAI-shaped error response.
http::response<http::string_body> make_error(unsigned status, bool keep_alive, std::string_view message,
                                             std::string_view type, std::string_view param = {},
                                             std::string_view code = {});
// The error in the shape of `kind`'s API: OpenAI's, or for the Messages API Anthropic's
// {"type":"error","error":{"type","message"}} with the type its status has there.
http::response<http::string_body> make_api_error(api kind, unsigned status, bool keep_alive, std::string_view message,
                                                 std::string_view type, std::string_view param = {},
                                                 std::string_view code = {});

}  // namespace sluice::sim
