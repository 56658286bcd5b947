// proxy::handler: the request story for one worker thread — route, validate, send upstream, relay.
// Owns that thread's upstream client (and so its keep-alive pool). Shared settings are read-only.
#pragma once

#include <memory>
#include <string>

#include "core/boxed.hpp"
#include "http/server.hpp"
#include "proxy/options.hpp"
#include "proxy/relay.hpp"
#include "proxy/request_validation.hpp"
#include "proxy/services.hpp"
#include "proxy/structured_output.hpp"
#include "proxy/upstream_metrics.hpp"
#include "routing/router.hpp"
#include "runtime/watchdog.hpp"
#include "upstream/client.hpp"

namespace sluice::proxy {

namespace bhttp = boost::beast::http;

// Read-only after start-up; shared by every worker thread's handler.
struct shared_config {
  const options& proxy;
  const upstream::options& upstream;
  routing::router& router;  // the upstreams (targets, keys, circuits, pacing) and the pick
  services& svc;
  // Structured outputs: the schema-* settings and the process-wide compiled-schema cache (null: off).
  const schema_options* schema = nullptr;
  schema::schema_cache* schemas = nullptr;
  upstream_metrics* upstream_stats = nullptr;  // retries, holds (null in tests that do not care)
};

// What one request went through, for its metrics, its log line and x-sluice-overhead-ms.
struct story {
  obs::route route = obs::route::other;
  std::string request_id;
  std::string model;
  runtime::steady::time_point start = runtime::steady::now();
  double overhead_seconds = 0;  // time spent in sluice itself before the upstream answered
  std::uint64_t bytes_in = 0;
  bool stream = false;
  api which = api::chat_completions;
  bool include_usage = false;          // the client asked for stream_options.include_usage
  std::uint64_t token_estimate = 0;    // paced cost: prompt estimate + max tokens
  std::optional<output_contract> contract;  // structured outputs: the schema the output must follow
  std::string overhead_header() const;
};

// Held for the whole upstream exchange: the global slot (+ memory reservation) and the per-key slot.
struct admission_ticket {
  admission::permit slot;
  std::optional<admission::key_permit> key;
};

// One request's way to an answer across attempts and upstreams (handler_forward.cpp). Lives in the
// handler's frame and is never moved: the response refers to the abort handle.
struct exchange final : http::peer_listener {
  void on_peer_gone() noexcept override { abort.abort(); }

  routing::lease lease;                         // the upstream that gave the answer, while it lasts
  upstream::abort_handle abort;
  std::unique_ptr<upstream::response> response;  // the answer's head (and, for SSE, its body)
  std::optional<std::string> body;              // a whole (non-SSE) answer, already read
  unsigned status = 0;
  unsigned attempts = 0;
  boxed<error> failure;                         // no answer to pass on: send this error
  boost::beast::http::fields failure_headers;   // e.g. Retry-After, with the failure
  bool client_gone = false;
  bool usage_injected = false;                  // this attempt's body asks for usage the client did not
  std::string alternate_body;                   // the other variant of the body (injected or original)
  std::string client_authorization;             // pass-through mode only: the client's own key
  bool is_sse() const;
};

class handler final : public http::request_handler {
 public:
  handler(net::any_io_executor ex, const shared_config& cfg, upstream::ssl::context* tls);

  task<bool> handle(http::request req, http::connection& conn) override;
  task<void> reject(const error& e, http::connection& conn) override;

  // This thread's client for upstream i (its keep-alive pool).
  upstream::client& upstream_client(std::size_t i = 0) noexcept { return *clients_.at(i); }
  // The watchdog of this handler's thread (owned by its http::server); relays register with it.
  void set_watchdog(runtime::watchdog* w) noexcept { watchdog_ = w; }

 private:
  task<bool> handle_completion(http::request& req, http::connection& conn, story& st, api which);
  task<bool> handle_other(http::request& req, http::connection& conn, story& st);
  // Method, body validation and the structured-output contract of a completion request; fills `st`.
  std::optional<error> prepare_completion(http::request& req, story& st, api which);
  task<bool> forward(http::request& req, http::connection& conn, std::string path, story& st);
  // Picks an upstream, sends, classifies, and retries / fails over what is safe to retry, until
  // `x` holds an answer to pass on or a failure to report (handler_forward.cpp).
  task<void> run_exchange(exchange& x, upstream::request& req, http::connection& conn, story& st,
                          std::string_view path);
  // Waits `d` while watching the client; false when the client left.
  task<bool> pause(duration d, http::connection& conn);
  task<void> sleep_for(duration d, http::connection& conn);
  task<bool> relay_stream(exchange& x, http::connection& conn, std::string_view path, story& st, unsigned version,
                          bool keep);
  task<bool> send_failure(exchange& x, http::connection& conn, story& st, unsigned version, bool keep);
  task<bool> write_stream_head(exchange& x, http::connection& conn, story& st, unsigned version, bool keep);
  // Metrics, the upstream's health and budget, and the log line of a finished stream.
  bool account_stream(exchange& x, story& st, const relay_result& result, bool keep);
  task<bool> answer_whole(exchange& x, upstream::request& up_req, http::connection& conn, std::string_view path,
                          story& st, unsigned version, bool keep);
  task<bool> send_error(const error& e, http::connection& conn, unsigned version, bool keep_alive, story& st,
                        std::optional<obs::reject_reason> reason = std::nullopt,
                        const bhttp::fields* extra = nullptr);
  task<bool> send_json(bhttp::status status, std::string body, std::string_view content_type,
                       http::connection& conn, unsigned version, bool keep_alive, story& st);
  // Client key, memory shed, then a slot from the bounded queue. Sends the refusal itself.
  task<std::optional<admission_ticket>> admit(http::request& req, http::connection& conn, story& st, bool keep);
  task<admission::acquire_result> acquire_slot(http::connection& conn);
  bool keep_alive(const http::request& req) const noexcept;
  // Ends when the client goes (aborting `abort`) or, raced beside a wait (`||`), when the other
  // side cancels the client socket's operations: the admission queue wait and the pauses.
  task<void> watch_client(http::connection& conn, upstream::abort_handle& abort);
  // Structured outputs on a whole 2xx answer (handler_structured.cpp): the verdict and, under
  // `retry`, new upstream attempts while it is invalid; `status`/`body` become the last attempt's.
  task<whole_check> check_whole_answer(const output_contract& c, upstream::request& up_req, http::connection& conn,
                                       story& st, std::string_view path, unsigned& status, std::string& body);

  const shared_config& cfg_;
  std::vector<std::unique_ptr<upstream::client>> clients_;  // one per upstream, this thread's pools
  runtime::watchdog* watchdog_ = nullptr;
};

}  // namespace sluice::proxy
