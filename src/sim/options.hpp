// sim::options: every knob of the upstream simulator, with defaults. Filled once on the main thread
// (from YAML and flags through config::option_table), then copied into the server and read-only.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/option_table.hpp"
#include "core/error.hpp"
#include "core/units.hpp"

namespace sluice::sim {

struct options {
  std::string listen = "127.0.0.1:8081";  // port 0 picks a free port
  std::uint64_t threads = 1;              // worker threads, each with its own io_context and listener
  std::uint64_t tokens = 16;              // tokens per response (max_tokens may cut it)
  duration ttft{0};                       // time to first token
  duration token_delay{0};                // between tokens
  std::uint64_t token_size = 4;           // bytes of text per token
  std::uint64_t seed = 1;                 // content and fault PRNG seed
  std::vector<std::string> models{"sim-1"};
  double fault_5xx_rate = 0;              // share of completion requests answered 500
  double fault_429_rate = 0;              // share answered 429 with rate-limit headers
  duration retry_after = std::chrono::seconds(1);
  std::optional<std::uint64_t> stall_after;      // stop sending after K tokens, keep the connection
  std::optional<std::uint64_t> reset_after;      // TCP reset after K tokens
  std::optional<std::uint64_t> malformed_after;  // a non-JSON SSE event after K tokens
  duration header_delay{0};               // before the response headers
  std::uint64_t limit_rpm = 0;            // requests per minute over all threads (token bucket); 0 = off
  std::uint64_t limit_tpm = 0;            // tokens per minute (prompt + max tokens); 0 = off
  std::uint64_t max_body_bytes = 8ull * 1024 * 1024;
  std::uint64_t max_header_bytes = 16 * 1024;
  // The streamed-upload routes (files, audio transcriptions and translations, image edits and
  // variations, upload parts) read their bodies in bounded pieces under this cap instead of
  // max-body; it also caps a speech response's size.
  std::uint64_t max_upload_bytes = 1024ull * 1024 * 1024;
  std::uint64_t file_store_bytes = 64ull * 1024 * 1024;  // uploaded bytes kept for /content, over all files
  std::uint64_t speech_rate = 0;  // bytes per second of a speech response; 0 = as fast as the client reads
  // The largest message a Realtime WebSocket session reads (a larger one closes it with 1009).
  std::uint64_t realtime_max_message = 16ull * 1024 * 1024;
  bool spaced_json = false;               // JSON with a space after ':' and ',' (as Python writes it)
  // The API key the /v1 and /openai routes require (empty = none): `Authorization: Bearer KEY`, on
  // /v1/messages `x-api-key: KEY`, on the Azure OpenAI paths (/openai/...) `api-key: KEY`.
  std::string require_key;

  // Registers every field by name. The table keeps references: `*this` must outlive it.
  void register_options(config::option_table& table);
  // Ranges the parsers cannot see (rates within 0..1, non-zero sizes).
  result<void> validate() const;
};

}  // namespace sluice::sim
