// What one simulated request asks for: the completion request parsed from its JSON body, and the
// per-request settings (server options overridden by x-sim-* headers). Pure functions, no I/O;
// values are plain and owned by the session that serves the request.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/units.hpp"
#include "sim/options.hpp"

namespace sluice::sim {

// POST /v1/chat/completions, POST /v1/completions, POST /v1/responses, POST /v1/messages (Anthropic)
enum class api { chat, completion, responses, messages };
inline constexpr std::size_t api_count = 4;

// The route of each api ("/v1/messages"), as the stats and /metrics label requests.
std::string_view route_of(api kind) noexcept;

// Faults decided before the response headers (an error status instead of a completion).
enum class status_fault { none, http_5xx, http_429, forced };

// The raw x-sim-* header values of one request (empty = not given). Views into the request.
struct header_overrides {
  std::string_view tokens, ttft, token_delay, token_size, header_delay, retry_after;
  std::string_view fault, fault_after, status;
  std::string_view content, content_b64;  // x-sim-content / x-sim-content-b64: the exact output text
  std::string_view tool_call;             // x-sim-tool-call: NAME, the function the answer calls
  // A script entry's `content` array: choice i's exact output (no header stands for it).
  const std::vector<std::string>* choice_contents = nullptr;
};

struct request_settings {
  std::uint64_t tokens = 0;
  std::uint64_t token_size = 0;
  duration ttft{0}, token_delay{0}, header_delay{0}, retry_after{0};
  // Mid-stream faults, each after K completion tokens; unset means never.
  std::optional<std::uint64_t> stall_after, reset_after, malformed_after;
  // Set by x-sim-fault=5xx|429 or x-sim-status; `none` leaves the choice to the configured rates.
  status_fault fault = status_fault::none;
  bool faults_pinned = false;  // x-sim-fault was given: the random rates do not apply
  int status = 0;              // for status_fault::forced
  // x-sim-content(-b64): the assistant output is exactly this text, cut into token_size-byte tokens
  // (never inside a UTF-8 sequence); `tokens` is then ceil(size / token_size).
  std::optional<std::string> content;
  // Per choice (n > 1), from a script entry's `content` array: choice i outputs element i (the last
  // element for the choices past its end); empty = `content` (or generated words) for every choice.
  std::vector<std::string> choice_contents;
  // x-sim-tool-call: the answer calls this function (chat, responses) whatever the request's
  // tools and tool_choice say; the output text (content, or "{}") is then its arguments.
  std::optional<std::string> tool_call;
};

// Server options overridden by the request's headers; a bad header value is a 400 naming it.
result<request_settings> resolve_settings(const options& opts, const header_overrides& h);

// Applies the configured fault rates with a uniform sample u in [0,1), unless the request pinned
// its faults by header.
status_fault pick_status_fault(const request_settings& s, const options& opts, double u);

struct completion_request {
  api kind = api::chat;
  std::string model;
  bool stream = false;
  bool include_usage = false;                // stream_options.include_usage
  std::optional<std::uint64_t> max_tokens;   // the smaller of max_tokens / max_completion_tokens
  std::uint32_t n = 1;                       // choices (chat, completions; 1..max_choices)
  std::uint64_t prompt_tokens = 0;           // estimated from the prompt text, ~4 bytes a token
  std::uint64_t hash = 0;                    // of (seed, kind, body): drives ids, `created` and text
  // The function the answer calls instead of answering in text (chat, responses): with `tools`
  // and a tool_choice of "required" (the first function tool) or naming a function (that one);
  // x-sim-tool-call overrides it. Empty: a text answer.
  std::string tool_call;
};

// The most choices (`n`) one request may ask for, as at OpenAI.
inline constexpr std::uint32_t max_choices = 128;

// A function name as OpenAI accepts it: 1..64 of a-z, A-Z, 0-9, '_' and '-'.
bool valid_function_name(std::string_view name) noexcept;

// Parses and checks a chat, completions or Responses request body (400-class errors with OpenAI's
// `param`). Messages API bodies are parse_messages' (sim/messages.hpp). A non-empty `deployment`
// (an Azure deployment path) is the model: the body's `model` is then optional and ignored.
result<completion_request> parse_completion(api kind, std::string_view body, std::uint64_t seed,
                                            std::string_view deployment = {});

// The hash of (seed, kind, body) that drives a response's ids, `created` and text.
std::uint64_t request_hash(api kind, std::string_view body, std::uint64_t seed) noexcept;

}  // namespace sluice::sim
