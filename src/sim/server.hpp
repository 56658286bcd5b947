// sim::server: the OpenAI-compatible (and Anthropic Messages API) upstream simulator, in-process. It
// owns its worker threads (one io_context and one SO_REUSEPORT listener each); start/stop/~server are
// for one owning thread (never a worker thread), snapshot()/port()/control()/script_remaining() may
// be called from any thread.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string_view>

#include "core/error.hpp"
#include "runtime/asio.hpp"
#include "sim/options.hpp"
#include "sim/request.hpp"

namespace sluice::sim {

// Counters summed over the worker threads. A stream is a completion request with "stream": true
// that got past the status faults: started = completed + aborted + active + ended by a reset fault.
struct stats {
  std::uint64_t requests = 0;
  std::uint64_t streams_started = 0;
  std::uint64_t streams_completed = 0;  // [DONE] written
  std::uint64_t streams_aborted = 0;    // the client closed first (during delays, stalls or writes)
  std::uint64_t active_streams = 0;
  // The most streams open at once: exact with one worker thread; with several, the sum of each
  // thread's own peak (an upper bound).
  std::uint64_t peak_active_streams = 0;
  std::uint64_t active_connections = 0;
  std::uint64_t connections_accepted = 0;
  std::uint64_t responses_2xx = 0;      // by the status of the response head sent
  std::uint64_t responses_4xx = 0;      // 429s included
  std::uint64_t responses_5xx = 0;
  std::uint64_t responses_429 = 0;
  // Requests carrying an Authorization, x-api-key or api-key header (the values are never logged).
  std::uint64_t requests_with_auth = 0;
  std::uint64_t faults_injected = 0;    // 5xx/429/forced statuses, stalls, resets, malformed events
  std::uint64_t completion_requests = 0;  // chat/completions/responses/messages requests received, whatever the answer
  // completion_requests by route, indexed by api (route_of names each: "/v1/messages").
  std::array<std::uint64_t, api_count> completion_requests_by_api{};
  std::uint64_t completions_running = 0;  // of those, being served now (vllm:num_requests_running)
  std::uint64_t completions_succeeded = 0;  // answered 2xx to the last byte (vllm:request_success_total)
  std::uint64_t rate_limited = 0;       // 429s from limit-rpm / limit-tpm (also in responses_429)
  // Requests to an Azure OpenAI path (/openai/...), whatever the answer (refusals included); their
  // completions also count in completion_requests under the matching /v1 route.
  std::uint64_t azure_requests = 0;
  // The large-body routes: files recorded in the store (POST /v1/files, completed uploads); body
  // bytes the streamed uploads read; speech and file content bytes sent; streamed uploads whose
  // client left before the body's end (nothing of them is stored); the store's kept bytes now.
  std::uint64_t files_stored = 0;
  std::uint64_t upload_bytes = 0;
  std::uint64_t download_bytes = 0;
  std::uint64_t uploads_aborted = 0;
  std::uint64_t file_store_bytes = 0;
  // The stored objects (batches, vector stores, fine-tuning jobs, conversations and what is under
  // them): kept now and their serialized bytes (gauges); those that went for the store's bounds.
  std::uint64_t stored_objects = 0;
  std::uint64_t stored_object_bytes = 0;
  std::uint64_t objects_evicted = 0;
  // The Realtime WebSocket (GET /v1/realtime): sessions accepted (upgraded); sessions open now;
  // data messages read and written (every server event, echoes included); sessions the client ended
  // with a close frame; input audio bytes decoded from input_audio_buffer.append.
  std::uint64_t realtime_sessions = 0;
  std::uint64_t realtime_open = 0;
  std::uint64_t realtime_messages_in = 0;
  std::uint64_t realtime_messages_out = 0;
  std::uint64_t realtime_closed_by_client = 0;
  std::uint64_t realtime_audio_bytes = 0;
  // Timed waits that ran to their deadline (time to first token, token delays, header delays) and
  // how late the worker woke from them: when its event loop cannot keep up, the wakeups come late
  // and the simulator, not the system under test, sets the pace.
  std::uint64_t timer_waits = 0;
  std::uint64_t timer_late_1ms = 0;     // woke more than 1 ms late
  std::uint64_t timer_late_10ms = 0;    // more than 10 ms
  std::uint64_t timer_late_100ms = 0;   // more than 100 ms
  std::uint64_t timer_late_sum_us = 0;  // total lateness, microseconds
  std::uint64_t timer_late_max_us = 0;  // the latest wakeup, microseconds
};

class server {
 public:
  explicit server(options opts);
  ~server();  // stops
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  // Validates the options, binds (port 0 picks a free port), starts the worker threads.
  result<tcp::endpoint> start();
  // Closes the listeners and every connection, then joins the threads. Idempotent.
  void stop();
  stats snapshot() const;
  std::uint16_t port() const;
  // Runtime control, the same as POST /sim/control with this JSON body (engine values for /metrics,
  // script entries for the next completion requests, clear). Works before start() and while running;
  // a bad body changes nothing and its error (bad_request) names the field.
  result<void> control(std::string_view json_body);
  // Script entries not yet taken by a completion request.
  std::size_t script_remaining() const;

  struct state;  // shared with the worker threads; defined in sim/worker.hpp

 private:
  std::unique_ptr<state> state_;
};

}  // namespace sluice::sim
