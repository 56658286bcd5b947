#include "sim/options.hpp"

#include <charconv>

#include "sim/rate_limit.hpp"

namespace sluice::sim {
namespace {

// "K" or "off": an optional token count, unset by default so the fault never fires.
config::option_spec optional_count(std::string name, std::string help, std::optional<std::uint64_t>& target) {
  return {std::move(name), std::move(help), "off", [&target](std::string_view v) -> result<void> {
            if (v == "off" || v == "none") {
              target.reset();
              return ok;
            }
            std::uint64_t x = 0;
            auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
            if (v.empty() || ec != std::errc{} || p != v.data() + v.size())
              return error::make(errc::bad_request, "expected a token count or 'off', got '" + std::string(v) + "'");
            target = x;
            return ok;
          }};
}

}  // namespace

void options::register_options(config::option_table& t) {
  t.add("listen", "address to listen on, HOST:PORT (port 0 picks a free one)", listen)
      .add("threads", "worker threads, each with its own SO_REUSEPORT listener", threads)
      .add("tokens", "tokens per response (max_tokens in the request may cut it)", tokens)
      .add_duration("ttft", "time to first token", ttft)
      .add_duration("token-delay", "delay between tokens", token_delay)
      .add("token-size", "bytes of text per token", token_size)
      .add("seed", "seed for generated content and fault sampling", seed)
      .add_list("models", "model ids listed by GET /v1/models", models)
      .add("fault-5xx-rate", "share (0..1) of completion requests answered with a 500", fault_5xx_rate)
      .add("fault-429-rate", "share (0..1) of completion requests answered with a 429 and rate-limit headers",
           fault_429_rate)
      .add_duration("retry-after", "retry-after sent with 429 responses", retry_after)
      .add_custom(optional_count("stall-after", "stop sending after K tokens and keep the connection open", stall_after))
      .add_custom(optional_count("reset-after", "reset the TCP connection after K tokens", reset_after))
      .add_custom(optional_count("malformed-after", "send a malformed (non-JSON) SSE event after K tokens",
                                 malformed_after))
      .add_duration("header-delay", "delay before sending the response headers", header_delay)
      .add("limit-rpm", "upstream rate limit: requests per minute over all threads (0 = off)", limit_rpm)
      .add("limit-tpm", "upstream rate limit: tokens per minute, prompt plus max tokens (0 = off)", limit_tpm)
      .add_size("max-body", "largest accepted request body", max_body_bytes)
      .add_size("max-header", "largest accepted request head", max_header_bytes)
      .add_size("max-upload",
                "largest body of a streamed upload (files, audio transcriptions/translations, image edits/variations, "
                "upload parts), read in bounded pieces; also caps a speech response",
                max_upload_bytes)
      .add_size("file-store", "uploaded file bytes kept for GET /v1/files/{id}/content, over all files (a file past "
                "it keeps only its size and digest)", file_store_bytes)
      .add_size("speech-rate", "bytes per second of a /v1/audio/speech response (0 = as fast as the client reads)",
                speech_rate)
      .add_size("realtime-max-message",
                "largest message a /v1/realtime WebSocket session reads; a larger one closes the session with 1009",
                realtime_max_message)
      .add("spaced-json", "write JSON with a space after every ':' and ',' (as Python's json.dumps does)",
           spaced_json)
      .add("require-key",
           "API key the /v1 and /openai routes require: Authorization: Bearer KEY, x-api-key: KEY on /v1/messages, "
           "api-key: KEY on the Azure OpenAI paths (/openai/...)",
           require_key);
}

result<void> options::validate() const {
  auto bad = [](std::string msg) { return error::make(errc::bad_request, std::move(msg)); };
  if (threads == 0 || threads > 1024) return bad("threads: expected 1..1024");
  if (token_size == 0 || token_size > 1024 * 1024) return bad("token-size: expected 1 byte .. 1MiB");
  if (tokens > 10'000'000) return bad("tokens: at most 10000000");
  if (!(fault_5xx_rate >= 0 && fault_5xx_rate <= 1)) return bad("fault-5xx-rate: expected 0..1");
  if (!(fault_429_rate >= 0 && fault_429_rate <= 1)) return bad("fault-429-rate: expected 0..1");
  if (fault_5xx_rate + fault_429_rate > 1) return bad("fault-5xx-rate + fault-429-rate: must not exceed 1");
  if (limit_rpm > max_rate_limit) return bad("limit-rpm: at most " + std::to_string(max_rate_limit));
  if (limit_tpm > max_rate_limit) return bad("limit-tpm: at most " + std::to_string(max_rate_limit));
  if (models.empty()) return bad("models: at least one model id");
  if (max_body_bytes == 0) return bad("max-body: must be positive");
  if (max_header_bytes < 1024) return bad("max-header: at least 1KiB");
  if (max_upload_bytes == 0) return bad("max-upload: must be positive");
  if (realtime_max_message == 0) return bad("realtime-max-message: must be positive");
  auto addr = config::parse_host_port(listen);
  if (!addr) return bad("listen: " + addr.err().message);
  return ok;
}

}  // namespace sluice::sim
