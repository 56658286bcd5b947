// The audio routes of the simulator, as pure functions: what POST /v1/audio/speech will send (its
// size, byte seed, type and pace), and the deterministic transcript of an uploaded file for
// /v1/audio/transcriptions and /v1/audio/translations in each response_format. No I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "sim/form.hpp"
#include "sim/options.hpp"

namespace sluice::sim {

// The bytes a speech response carries without x-sim-speech-bytes: base + per_char * len(input).
inline constexpr std::uint64_t speech_base_bytes = 16384;
inline constexpr std::uint64_t speech_bytes_per_char = 64;

struct speech_plan {
  std::uint64_t bytes = 0;  // the body's size
  std::uint64_t seed = 0;   // of its byte_pattern: a hash of the request body and the sim's seed
  std::string content_type;
  std::uint64_t rate = 0;   // bytes per second; 0 = as fast as the client reads
};

// The Content-Type of a response_format (mp3 when empty), or nothing for an unknown one.
std::optional<std::string_view> speech_content_type(std::string_view format) noexcept;

// POST /v1/audio/speech: the JSON body and the x-sim-speech-bytes / x-sim-speech-rate header values
// (empty = not given). model, input and voice are required; a bad field or header is a bad_request
// naming it. The size is capped by max-upload.
result<speech_plan> plan_speech(std::string_view body, std::string_view bytes_header, std::string_view rate_header,
                                const options& opts);

enum class transcript_format { json, text, verbose_json, srt, vtt };

// What a transcription or translation request asked for, from its form.
struct transcription_request {
  bool translation = false;
  transcript_format format = transcript_format::json;
  bool stream = false;
  std::uint64_t file_bytes = 0, file_digest = 0;
};

// The form of POST /v1/audio/transcriptions (translation = false) or /translations: `file` and
// `model` required, response_format one of json, text, verbose_json, srt, vtt; `stream` only on
// transcriptions. A bad_request naming the field otherwise.
result<transcription_request> transcription_request_of(const form_collector& form, bool translation);

// The transcript of a file: 8 + size/4096 words (at most max_transcript_words) drawn by a PRNG
// seeded by its digest; input tokens max(1, size/1024), output tokens one a word.
inline constexpr std::uint64_t max_transcript_words = 200;
struct transcript {
  std::vector<std::string_view> words;
  std::string text;  // the words joined by spaces
  std::uint64_t input_tokens = 0, output_tokens = 0;
  double seconds = 0;  // its "duration": the size as 16-bit 16 kHz mono, to 0.01 s
};
transcript transcript_of(std::uint64_t digest, std::uint64_t size);

// The response body and its Content-Type for a request and its transcript (an SSE body of
// transcript.text.delta events and a transcript.text.done when the request streams).
struct media_reply {
  std::string content_type;
  std::string body;
};
media_reply transcription_reply(const transcription_request& req, const transcript& t);

}  // namespace sluice::sim
