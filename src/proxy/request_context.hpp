// request_context: one request's state from its head to its log line: who asked (id, route, API),
// what the body said, what the gateway spent on it, how it is cancelled, and how it ended (the
// request_end that finish() logs and counts exactly once). Made by the pipeline for each request,
// it lives in the pipeline's coroutine frame for the request's whole life (a stream's too: keep
// it small). One thread: the connection's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "http/connection.hpp"
#include "observability/metrics.hpp"
#include "proxy/cancel.hpp"
#include "proxy/request_trace.hpp"
#include "proxy/request_validation.hpp"
#include "proxy/structured/structured_output.hpp"
#include "runtime/watchdog.hpp"

namespace sluice::proxy {

struct streamed_route;
class client_upload;

// Which of the three log lines a request writes (observability/log.hpp).
enum class end_kind : std::uint8_t { completed, stream, refused };

// How a request ended: filled in by the phase that answered it, read by finish().
struct request_end {
  end_kind kind = end_kind::completed;
  int status = 0;                                 // the HTTP status sent to the client (0: none)
  obs::outcome outcome = obs::outcome::ok;
  std::string_view reason;                        // a static label: refusal, error code, "client_gone"
  std::optional<obs::reject_reason> rejection;    // counted in sluice_rejections_total
  std::string upstream;                           // the upstream that answered ("" if none)
  unsigned attempts = 0;                          // upstream attempts made
  runtime::steady::time_point first_event{};      // streams: the first content event
  double relay_overhead_seconds = 0;
  std::uint64_t tokens_in = 0;
  std::uint64_t tokens_out = 0;
  std::uint64_t bytes_out = 0;
  bool written = false;                           // the answer reached the client whole
};

struct request_context {
  request_context(http::downstream& c, unsigned http_version) : conn(&c), version(http_version) {}
  request_context(const request_context&) = delete;
  request_context& operator=(const request_context&) = delete;

  // The client's connection; a background job's event log; or the client's connection recorded
  // (a stored Responses stream, background.cpp).
  http::downstream* conn;
  // The client's socket itself (null for a job's run): what a handover gives to another worker process.
  http::connection* socket = nullptr;
  // The connection went to the worker process holding the response (background.cpp): nothing was
  // written here, and this process counts and logs nothing of it.
  bool handed_over = false;
  std::string request_id;
  obs::route route = obs::route::other;
  api which = api::chat_completions;
  // POST /v1/messages: the Anthropic dialect, served as chat completions (messages_dialect.hpp).
  bool messages_api = false;
  std::string path;  // the upstream path: /v1/chat/completions, /v1/models, ... (with its query: a streamed route's)
  // A route whose bodies go through as they are (streamed_routes.hpp; null for the others), and its
  // upload while one streams.
  const streamed_route* streamed = nullptr;
  client_upload* upload = nullptr;
  std::size_t objects_upstream = 0;  // a stored-object route's upstream (the only one it may use)
  unsigned version;
  bool keep_alive = false;
  bool job = false;  // a background job's run (background.cpp), not a client's request
  runtime::steady::time_point start = runtime::steady::now();
  std::uint64_t bytes_in = 0;

  // What the body said (parse).
  std::string model;
  bool stream = false;
  bool include_usage = false;          // the client asked for stream_options.include_usage
  std::uint64_t token_estimate = 0;    // paced cost: prompt estimate + max tokens
  std::uint64_t prompt_estimate = 0;   // its prompt part (about 4 bytes per token)
  std::optional<output_contract> contract;  // structured outputs: the schema the output must follow
  bool background = false;             // responses: `background: true` (a job, docs/queue.md)
  bool store = true;                   // responses: `store`
  std::string previous_response_id;    // responses: the response this one continues ("" = none)
  // GET /v1/responses/{id} and POST /v1/responses/{id}/cancel: the id, and which of the two.
  std::string response_id;
  bool response_cancel = false;
  // Who owns what this request stores and may read it back (docs/security.md): the client key's
  // tenant id; without a keys file, the tenant of the Authorization credential the client sent
  // ("" with none: the anonymous tenant).
  std::string tenant;

  double overhead_seconds = 0;  // time spent in sluice itself before the upstream answered
  request_cancel cancel;
  request_end end;
  request_trace trace;  // its part of a distributed trace (request_trace.hpp)

  // The model the router picks upstreams for: the body's, or the one GET /v1/models/{model} names
  // ("" for the model list: every upstream serves it).
  std::string_view model_for_routing() const noexcept { return model; }
  // x-sluice-overhead-ms: overhead_seconds in milliseconds, three decimals.
  std::string overhead_header() const;
};

}  // namespace sluice::proxy
