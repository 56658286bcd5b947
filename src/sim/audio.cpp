#include "sim/audio.hpp"

#include <array>
#include <cmath>
#include <cstdio>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include "core/units.hpp"
#include "sim/bytes.hpp"

namespace sluice::sim {
namespace {

namespace json = boost::json;

constexpr std::array<std::string_view, 32> spoken_words{
    "hello", "this",   "is",    "a",      "short", "recording", "about", "the",  "weather", "today",  "we",
    "will",  "see",    "some",  "rain",   "in",    "morning",   "and",   "sun",  "later",   "on",     "please",
    "call",  "back",   "when",  "you",    "can",   "thank",     "for",   "your", "time",    "everyone"};

error speech_refusal(std::string message, std::string param) {
  return error::make(errc::bad_request, std::move(message), std::move(param));
}

result<std::string_view> required_string(const json::object& o, std::string_view name) {
  const auto* v = o.if_contains(name);
  if (!v || !v->is_string() || v->get_string().empty())
    return speech_refusal("Missing required parameter: '" + std::string(name) + "'.", std::string(name));
  return std::string_view(v->get_string());
}

// voice: a name, or (newer API) an object naming a custom voice by id.
result<void> check_voice(const json::object& o) {
  const auto* v = o.if_contains("voice");
  const bool named = v && v->is_string() && !v->get_string().empty();
  const bool by_id = v && v->is_object() && v->get_object().if_contains("id") && v->get_object().at("id").is_string();
  if (!named && !by_id) return speech_refusal("Missing required parameter: 'voice'.", "voice");
  return ok;
}

result<void> check_speech_options(const json::object& o, std::string_view& content_type) {
  content_type = "audio/mpeg";
  if (const auto* f = o.if_contains("response_format"); f && !f->is_null()) {
    const auto type = f->is_string() ? speech_content_type(f->get_string()) : std::nullopt;
    if (!type) return speech_refusal("response_format: one of mp3, opus, aac, flac, wav, pcm", "response_format");
    content_type = *type;
  }
  if (const auto* s = o.if_contains("speed"); s && !s->is_null()) {
    const double speed = s->is_double() ? s->get_double() : s->is_int64() ? static_cast<double>(s->get_int64()) : -1;
    if (!(speed >= 0.25 && speed <= 4.0)) return speech_refusal("speed: a number from 0.25 to 4.0", "speed");
  }
  return ok;
}

// A header size ("2MiB", "16384"), or the fallback when the header is absent.
result<std::uint64_t> header_size(std::string_view value, std::string_view name, std::uint64_t fallback) {
  if (value.empty()) return fallback;
  auto n = parse_size(value);
  if (!n) return speech_refusal(std::string(name) + ": " + n.err().message, std::string(name));
  return *n;
}

std::string clock_text(double seconds, char decimal_mark) {
  const auto ms = static_cast<std::uint64_t>(std::llround(seconds * 1000));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02llu:%02llu:%02llu%c%03llu", static_cast<unsigned long long>(ms / 3'600'000),
                static_cast<unsigned long long>(ms / 60'000 % 60), static_cast<unsigned long long>(ms / 1000 % 60),
                decimal_mark, static_cast<unsigned long long>(ms % 1000));
  return buf;
}

json::object transcript_usage(const transcript& t) {
  return {{"type", "tokens"},
          {"input_tokens", t.input_tokens},
          {"input_token_details", json::object{{"text_tokens", 0}, {"audio_tokens", t.input_tokens}}},
          {"output_tokens", t.output_tokens},
          {"total_tokens", t.input_tokens + t.output_tokens}};
}

std::string verbose_body(const transcription_request& req, const transcript& t) {
  json::object segment{{"id", 0},          {"seek", 0},           {"start", 0.0},
                       {"end", t.seconds}, {"text", t.text},      {"tokens", json::array()},
                       {"temperature", 0.0}, {"avg_logprob", -0.25}, {"compression_ratio", 1.0},
                       {"no_speech_prob", 0.01}};
  json::object o{{"task", req.translation ? "translate" : "transcribe"},
                 {"language", "english"},
                 {"duration", t.seconds},
                 {"text", t.text},
                 {"segments", json::array{std::move(segment)}}};
  if (!req.translation) o["usage"] = json::object{{"type", "duration"}, {"seconds", std::ceil(t.seconds)}};
  return json::serialize(o);
}

// One transcript.text.delta event per word (the deltas add up to the text), then the done event.
std::string stream_body(const transcript& t) {
  std::string out;
  for (std::size_t i = 0; i < t.words.size(); ++i) {
    std::string delta(t.words[i]);
    if (i + 1 < t.words.size()) delta += ' ';
    out += "data: " + json::serialize(json::object{{"type", "transcript.text.delta"}, {"delta", delta}}) + "\n\n";
  }
  out += "data: " +
         json::serialize(json::object{{"type", "transcript.text.done"}, {"text", t.text}, {"usage", transcript_usage(t)}}) +
         "\n\n";
  return out;
}

}  // namespace

std::optional<std::string_view> speech_content_type(std::string_view format) noexcept {
  if (format.empty() || format == "mp3") return "audio/mpeg";
  if (format == "opus") return "audio/opus";
  if (format == "aac") return "audio/aac";
  if (format == "flac") return "audio/flac";
  if (format == "wav") return "audio/wav";
  if (format == "pcm") return "audio/pcm";
  return std::nullopt;
}

result<speech_plan> plan_speech(std::string_view body, std::string_view bytes_header, std::string_view rate_header,
                                const options& opts) {
  boost::system::error_code ec;
  const json::value v = json::parse(body, ec);
  if (ec || !v.is_object()) return speech_refusal("The request body is not a JSON object.", "");
  const auto& o = v.get_object();
  if (auto model = required_string(o, "model"); !model) return std::move(model).err();
  auto input = required_string(o, "input");
  if (!input) return std::move(input).err();
  if (auto voice = check_voice(o); !voice) return std::move(voice).err();
  speech_plan plan;
  std::string_view type;
  if (auto checked = check_speech_options(o, type); !checked) return std::move(checked).err();
  plan.content_type = type;
  auto bytes = header_size(bytes_header, "x-sim-speech-bytes", speech_base_bytes + speech_bytes_per_char * input->size());
  if (!bytes) return std::move(bytes).err();
  auto rate = header_size(rate_header, "x-sim-speech-rate", opts.speech_rate);
  if (!rate) return std::move(rate).err();
  plan.bytes = std::min(*bytes, opts.max_upload_bytes);
  plan.rate = *rate;
  plan.seed = mix64(fnv1a_of(body) ^ mix64(opts.seed));
  return plan;
}

result<transcription_request> transcription_request_of(const form_collector& form, bool translation) {
  if (form.problem()) return *form.problem();
  transcription_request req;
  req.translation = translation;
  const form_file* file = form.file("file");
  if (!file) return speech_refusal("Missing required parameter: 'file'.", "file");
  req.file_bytes = file->digest.size;
  req.file_digest = file->digest.value;
  const std::string* model = form.field("model");
  if (!model || model->empty()) return speech_refusal("Missing required parameter: 'model'.", "model");
  if (const std::string* f = form.field("response_format"); f && !f->empty()) {
    constexpr std::array<std::string_view, 5> names{"json", "text", "verbose_json", "srt", "vtt"};
    std::size_t i = 0;
    while (i < names.size() && names[i] != *f) ++i;
    if (i == names.size())
      return speech_refusal("response_format: one of json, text, verbose_json, srt, vtt", "response_format");
    req.format = static_cast<transcript_format>(i);
  }
  if (const std::string* s = form.field("stream"); s && !translation) {
    if (*s != "true" && *s != "false") return speech_refusal("stream: true or false", "stream");
    req.stream = *s == "true";
  }
  return req;
}

transcript transcript_of(std::uint64_t digest, std::uint64_t size) {
  transcript t;
  const std::uint64_t count = std::min<std::uint64_t>(max_transcript_words, 8 + size / 4096);
  std::uint64_t state = mix64(digest);
  for (std::uint64_t i = 0; i < count; ++i) {
    state = mix64(state);
    t.words.push_back(spoken_words[state % spoken_words.size()]);
    if (i > 0) t.text += ' ';
    t.text += t.words.back();
  }
  t.input_tokens = std::max<std::uint64_t>(1, size / 1024);
  t.output_tokens = count;
  t.seconds = std::round(static_cast<double>(size) / 32000.0 * 100) / 100;
  return t;
}

media_reply transcription_reply(const transcription_request& req, const transcript& t) {
  if (req.stream) return {"text/event-stream; charset=utf-8", stream_body(t)};
  switch (req.format) {
    case transcript_format::text: return {"text/plain; charset=utf-8", t.text + "\n"};
    case transcript_format::srt:
      return {"text/plain; charset=utf-8", "1\n" + clock_text(0, ',') + " --> " + clock_text(t.seconds, ',') + "\n" + t.text + "\n\n"};
    case transcript_format::vtt:
      return {"text/vtt; charset=utf-8",
              "WEBVTT\n\n" + clock_text(0, '.') + " --> " + clock_text(t.seconds, '.') + "\n" + t.text + "\n\n"};
    case transcript_format::verbose_json: return {"application/json", verbose_body(req, t)};
    case transcript_format::json: break;
  }
  json::object o{{"text", t.text}};
  if (!req.translation) o["usage"] = transcript_usage(t);
  return {"application/json", json::serialize(o)};
}

}  // namespace sluice::sim
