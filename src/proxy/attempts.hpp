// The attempt loop's vocabulary: the upstream request a client's request becomes, the answer an
// exchange comes to, and the pure rules of the loop: what one attempt's outcome means for the
// upstream's health and whether the request tries again (classify_attempt, should_retry), tested
// on their own. The loop itself is pipeline::run_attempts (attempts.cpp). One thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/beast/http/fields.hpp>

#include "core/boxed.hpp"
#include "core/error.hpp"
#include "proxy/upstream_metrics.hpp"
#include "routing/router.hpp"
#include "runtime/watchdog.hpp"
#include "upstream/client.hpp"

namespace sluice::proxy {

// The request as it goes upstream, for every attempt (and a structured-output retry): the client's
// request with the forwarded headers and body, plus what attempts switch between.
struct upstream_call {
  upstream::request req;
  std::string client_authorization;  // pass-through mode only: the client's own key
  // The client's OpenAI-Organization / OpenAI-Project: sent only with the client's own key.
  std::string client_organization, client_project;
  bool usage_injected = false;       // the body now asks for usage the client did not ask for
  std::string alternate_body;        // the other variant of the body (injected or original)
  // May the body be rewritten to ask for usage (streams of chat/completions that did not ask)?
  bool may_inject_usage = false;
  bool key_counts_tokens = false;  // the client key has a tpm budget: usage is worth asking for
  // An Anthropic upstream's attempt (anthropic_upstream.hpp): the Messages body, translated at the
  // first such attempt; while `body_translated`, the request carries it and this holds the chat body.
  std::string other_dialect_body;
  bool body_translated = false;
  bool client_asked_usage = false;  // the chat body asked for usage before any injection
};

// The answer an exchange came to. Lives in the pipeline's frame and is never moved: the response
// refers to the request's abort handle.
struct exchange {
  routing::lease lease;                          // the upstream that gave the answer, while it lasts
  std::unique_ptr<upstream::response> response;  // the answer's head (and, for SSE, its body)
  std::optional<std::string> body;               // a whole (non-SSE) answer, already read
  unsigned status = 0;
  unsigned attempts = 0;
  boxed<error> failure;                          // no answer to pass on: send this error
  boost::beast::http::fields failure_headers;    // e.g. Retry-After, with the failure
  bool is_sse() const;
};

// Across the attempts of one exchange.
struct attempt_state {
  runtime::steady::time_point deadline;    // request-timeout from the request's start
  runtime::steady::time_point hold_until;  // max-hold from the exchange's start
  std::vector<bool> tried;                 // upstreams this request already failed on
};

// What one attempt came to.
enum class attempt_kind : std::uint8_t {
  answered,     // a response head (and, for a whole answer, its body)
  send_failed,  // no response: connect, TLS, send or head failed
  body_failed,  // a whole answer's body could not be read
  cancelled,    // the request was cancelled meanwhile
  refused,      // the request cannot be sent to this upstream (its dialect cannot carry it): final
};

struct attempt_outcome {
  attempt_kind kind = attempt_kind::answered;
  unsigned status = 0;            // answered: the upstream's status
  bool sse = false;               // answered: a 2xx event stream (its outcome is known at its end)
  errc failure = errc::internal;  // send/body failures
  bool retryable = false;         // send failures: the error says another attempt could help
  bool gateway_key = false;       // the request carried the gateway's own key (not the client's)
  bool reached = false;           // the request began to go to the upstream (not only a connect)
};

// What the outcome means for the upstream's circuit breaker.
enum class upstream_health : std::uint8_t { succeeded, failed, pending };

struct attempt_verdict {
  upstream_health health = upstream_health::succeeded;
  bool refund = false;                // the request never reached the upstream: its budget back
  std::optional<retry_reason> retry;  // another attempt could fix it
  // The upstream refused the gateway's own key: its body (which may quote the key) must not reach
  // the client, and the upstream is at fault, not the client.
  bool gateway_key_refused = false;
};

// Pure: 429 is a live upstream that is only rate limited (retry, the pacer holds back); 5xx,
// timeouts and broken connections count against it and are retried; a 401/403 to the gateway's own
// key counts against it and is final (a 502 of the gateway's); other answers are final; a stream's
// health is reported when it ends.
attempt_verdict classify_attempt(const attempt_outcome& o) noexcept;

struct retry_window {
  unsigned attempts = 0;      // made so far
  std::uint64_t max_attempts = 1;  // max-attempts
  bool past_deadline = false;
  bool cutting = false;       // the drain timeout passed
};

// Pure: whether the loop tries again after an attempt with verdict `v`.
bool should_retry(const attempt_verdict& v, const retry_window& w) noexcept;

// A 401/403 to the gateway's own key: the exchange ends with the gateway's 502 (the operator's
// problem, not the client's); the upstream's body, which may quote the key, is dropped.
void refuse_gateway_key(exchange& x);

}  // namespace sluice::proxy
