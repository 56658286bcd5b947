// The pure parts of the large-body routes: byte helpers, the form collector, speech plans,
// transcripts in every format, and the image answers.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "config/option_table.hpp"
#include "sim/audio.hpp"
#include "sim/bytes.hpp"
#include "sim/form.hpp"
#include "sim/images.hpp"

using namespace sluice;

namespace {

// A form as the upload routes collect it, from a multipart body with boundary "B".
struct media_form {
  sim::form_collector form{{"file", "image", "image[]"}};
  sim::multipart::failure failed = sim::multipart::failure::none;
};

void media_fill(media_form& f, std::string_view body) {
  sim::multipart::parser p("B");
  f.failed = p.feed(body, f.form);
  if (f.failed == sim::multipart::failure::none) f.failed = p.finish();
}

std::string media_part(std::string_view name, std::string_view value, std::string_view filename = {}) {
  std::string s = "--B\r\nContent-Disposition: form-data; name=\"" + std::string(name) + "\"";
  if (!filename.empty()) s += "; filename=\"" + std::string(filename) + "\"";
  return s + "\r\n\r\n" + std::string(value) + "\r\n";
}

}  // namespace

TEST(SimBytes, DigestPatternBase64AndHex) {
  sim::fnv1a_hasher h;
  h.feed("hel");
  h.feed("lo");
  EXPECT_EQ(h.value, sim::fnv1a_of("hello"));
  EXPECT_EQ(h.size, 5u);
  EXPECT_EQ(sim::fnv1a_of(""), 1469598103934665603ull);
  EXPECT_EQ(sim::base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(sim::base64_encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(sim::base64_encode("f"), "Zg==");
  EXPECT_EQ(sim::hex_digits(0xabc, 6), "000abc");
  // Any piece of the pattern equals the same bytes of one long fill.
  const sim::byte_pattern p(42);
  std::string whole(1000, '\0'), pieces(1000, '\0');
  p.fill(0, whole.data(), whole.size());
  for (std::size_t at = 0; at < 1000; at += 13) p.fill(at, pieces.data() + at, std::min<std::size_t>(13, 1000 - at));
  EXPECT_EQ(whole, pieces);
  std::string other(1000, '\0');
  sim::byte_pattern(43).fill(0, other.data(), other.size());
  EXPECT_NE(whole, other);
}

TEST(SimForm, FieldsFilesAndLimits) {
  media_form f;
  media_fill(f, media_part("model", "whisper-1") + media_part("file", "abc", "a.wav") + media_part("file", "zz") +
                    "--B--");
  ASSERT_EQ(f.failed, sim::multipart::failure::none);
  ASSERT_NE(f.form.field("model"), nullptr);
  EXPECT_EQ(*f.form.field("model"), "whisper-1");
  ASSERT_EQ(f.form.files().size(), 2u) << "a `file` part is a file even without a filename";
  EXPECT_EQ(f.form.file("file")->digest.value, sim::fnv1a_of("abc"));
  EXPECT_EQ(f.form.file("file")->filename, "a.wav");
  EXPECT_FALSE(f.form.problem());

  media_form big;
  media_fill(big, media_part("prompt", std::string(sim::max_form_field_bytes + 1, 'p')) + "--B--");
  ASSERT_TRUE(big.form.problem());
  EXPECT_EQ(big.form.problem()->param, "prompt");

  media_form many;
  std::string body;
  for (std::size_t i = 0; i <= sim::max_form_parts; ++i) body += media_part("f" + std::to_string(i), "v");
  media_fill(many, body + "--B--");
  EXPECT_TRUE(many.form.problem());
}

TEST(SimAudio, SpeechPlan) {
  sim::options o;
  auto plan = sim::plan_speech(R"({"model":"tts-1","input":"hello","voice":"alloy"})", "", "", o);
  ASSERT_TRUE(plan) << plan.err().message;
  EXPECT_EQ(plan->bytes, sim::speech_base_bytes + 5 * sim::speech_bytes_per_char);
  EXPECT_EQ(plan->content_type, "audio/mpeg");
  EXPECT_EQ(plan->rate, 0u);
  auto same = sim::plan_speech(R"({"model":"tts-1","input":"hello","voice":"alloy"})", "", "", o);
  auto other = sim::plan_speech(R"({"model":"tts-1","input":"hello!","voice":"alloy"})", "", "", o);
  EXPECT_EQ(plan->seed, same->seed);
  EXPECT_NE(plan->seed, other->seed);

  auto sized = sim::plan_speech(R"({"model":"m","input":"x","voice":{"id":"v1"},"response_format":"wav","speed":2})",
                                "2MiB", "64KiB", o);
  ASSERT_TRUE(sized) << sized.err().message;
  EXPECT_EQ(sized->bytes, 2u * 1024 * 1024);
  EXPECT_EQ(sized->rate, 64u * 1024);
  EXPECT_EQ(sized->content_type, "audio/wav");
  o.max_upload_bytes = 1000;
  EXPECT_EQ(sim::plan_speech(R"({"model":"m","input":"x","voice":"v"})", "5000", "", o)->bytes, 1000u);

  auto param_of = [&o](std::string_view body, std::string_view bytes = {}) {
    auto r = sim::plan_speech(body, bytes, "", o);
    return r ? std::string("ok") : r.err().param;
  };
  EXPECT_EQ(param_of(R"({"input":"x","voice":"v"})"), "model");
  EXPECT_EQ(param_of(R"({"model":"m","voice":"v"})"), "input");
  EXPECT_EQ(param_of(R"({"model":"m","input":"x"})"), "voice");
  EXPECT_EQ(param_of(R"({"model":"m","input":"x","voice":"v","response_format":"ogg"})"), "response_format");
  EXPECT_EQ(param_of(R"({"model":"m","input":"x","voice":"v","speed":9})"), "speed");
  EXPECT_EQ(param_of(R"({"model":"m","input":"x","voice":"v"})", "lots"), "x-sim-speech-bytes");
  for (auto [format, type] : {std::pair{"opus", "audio/opus"}, {"aac", "audio/aac"}, {"flac", "audio/flac"}, {"pcm", "audio/pcm"}})
    EXPECT_EQ(sim::speech_content_type(format), type);
}

TEST(SimAudio, TranscriptIsDeterministicAndSized) {
  const auto t = sim::transcript_of(123, 4096 * 10);
  EXPECT_EQ(t.words.size(), 18u);
  EXPECT_EQ(t.output_tokens, 18u);
  EXPECT_EQ(t.input_tokens, 40u);
  EXPECT_EQ(sim::transcript_of(123, 4096 * 10).text, t.text);
  EXPECT_NE(sim::transcript_of(124, 4096 * 10).text, t.text);
  EXPECT_EQ(sim::transcript_of(1, 100'000'000).words.size(), sim::max_transcript_words);
  EXPECT_EQ(sim::transcript_of(1, 10).input_tokens, 1u);
}

TEST(SimAudio, TranscriptionFormats) {
  media_form f;
  media_fill(f, media_part("file", std::string(5000, 'a'), "a.mp3") + media_part("model", "whisper-1") + "--B--");
  auto req = sim::transcription_request_of(f.form, false);
  ASSERT_TRUE(req) << req.err().message;
  const auto t = sim::transcript_of(req->file_digest, req->file_bytes);
  auto json = boost::json::parse(sim::transcription_reply(*req, t).body).as_object();
  EXPECT_EQ(json["text"].as_string(), t.text);
  EXPECT_EQ(json["usage"].at("input_tokens").as_int64(), 4);
  EXPECT_EQ(json["usage"].at("total_tokens").as_int64(), static_cast<std::int64_t>(4 + t.words.size()));
  EXPECT_EQ(json["usage"].at("input_token_details").at("audio_tokens").as_int64(), 4);

  req->translation = true;
  EXPECT_EQ(boost::json::parse(sim::transcription_reply(*req, t).body).as_object().size(), 1u) << "text only";
  req->format = sim::transcript_format::text;
  EXPECT_EQ(sim::transcription_reply(*req, t).body, t.text + "\n");
  req->format = sim::transcript_format::srt;
  EXPECT_TRUE(sim::transcription_reply(*req, t).body.starts_with("1\n00:00:00,000 --> 00:00:00,160\n"));
  req->format = sim::transcript_format::vtt;
  EXPECT_TRUE(sim::transcription_reply(*req, t).body.starts_with("WEBVTT\n\n00:00:00.000 --> 00:00:00.160\n"));
  req->format = sim::transcript_format::verbose_json;
  EXPECT_EQ(boost::json::parse(sim::transcription_reply(*req, t).body).at("task").as_string(), "translate");
}

TEST(SimAudio, TranscriptionStreamDeltasAddUpToTheText) {
  media_form f;
  media_fill(f, media_part("file", "abc", "a.mp3") + media_part("model", "m") + media_part("stream", "true") + "--B--");
  auto req = sim::transcription_request_of(f.form, false);
  ASSERT_TRUE(req && req->stream);
  const auto t = sim::transcript_of(req->file_digest, req->file_bytes);
  const auto reply = sim::transcription_reply(*req, t);
  EXPECT_TRUE(reply.content_type.starts_with("text/event-stream"));
  std::string joined, done;
  std::size_t deltas = 0;
  for (std::size_t at = 0; at < reply.body.size();) {
    const auto end = reply.body.find("\n\n", at);
    ASSERT_NE(end, std::string::npos);
    ASSERT_TRUE(reply.body.substr(at).starts_with("data: "));
    auto ev = boost::json::parse(reply.body.substr(at + 6, end - at - 6)).as_object();
    if (ev["type"] == "transcript.text.delta") {
      joined += ev["delta"].as_string();
      ++deltas;
    } else {
      EXPECT_EQ(ev["type"], "transcript.text.done");
      done = ev["text"].as_string();
      EXPECT_TRUE(ev.contains("usage"));
    }
    at = end + 2;
  }
  EXPECT_EQ(deltas, t.words.size());
  EXPECT_EQ(joined, t.text);
  EXPECT_EQ(done, t.text);
}

TEST(SimAudio, TranscriptionFormErrors) {
  auto param_of = [](const std::string& body, bool translation = false) {
    media_form f;
    media_fill(f, body + "--B--");
    auto r = sim::transcription_request_of(f.form, translation);
    return r ? std::string("ok") : r.err().param;
  };
  EXPECT_EQ(param_of(media_part("model", "m")), "file");
  EXPECT_EQ(param_of(media_part("file", "x", "a")), "model");
  EXPECT_EQ(param_of(media_part("file", "x", "a") + media_part("model", "m") + media_part("response_format", "xml")),
            "response_format");
  EXPECT_EQ(param_of(media_part("file", "x", "a") + media_part("model", "m") + media_part("stream", "yes")), "stream");
  EXPECT_EQ(param_of(media_part("file", "x", "a") + media_part("model", "m") + media_part("stream", "yes"), true), "ok");
}

TEST(SimImages, EditsAnswerWithTinyPngs) {
  media_form f;
  media_fill(f, media_part("image[]", "img1", "a.png") + media_part("image[]", "img2", "b.png") +
                    media_part("prompt", "a hat") + media_part("n", "3") + "--B--");
  auto req = sim::image_request_of(f.form, true);
  ASSERT_TRUE(req) << req.err().message;
  EXPECT_EQ(req->n, 3u);
  EXPECT_EQ(req->image_bytes, 8u);
  auto body = boost::json::parse(sim::images_body(*req, 1700000000)).as_object();
  EXPECT_EQ(body["created"].as_int64(), 1700000000);
  ASSERT_EQ(body["data"].as_array().size(), 3u);
  EXPECT_EQ(sim::tiny_png(0).substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(sim::tiny_png(0).size(), 8u + 25 + 27 + 12) << "signature, IHDR, IDAT, IEND";
  EXPECT_EQ(sim::base64_encode(sim::tiny_png(0xff0000)),
            "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAAD0lEQVR4AQEEAPv/AP8AAAMBAQCNHeWCAAAAAElFTkSuQmCC");
  EXPECT_EQ(sim::images_body(*req, 1), sim::images_body(*req, 1)) << "deterministic";
  EXPECT_TRUE(body["usage"].as_object().contains("input_tokens_details"));
}

TEST(SimImages, FormErrors) {
  auto param_of = [](const std::string& body, bool edit) {
    media_form f;
    media_fill(f, body + "--B--");
    auto r = sim::image_request_of(f.form, edit);
    return r ? std::string("ok") : r.err().param;
  };
  EXPECT_EQ(param_of(media_part("prompt", "p"), true), "image");
  EXPECT_EQ(param_of(media_part("image", "x", "a.png"), true), "prompt");
  EXPECT_EQ(param_of(media_part("image", "x", "a.png"), false), "ok");
  EXPECT_EQ(param_of(media_part("image", "x", "a.png") + media_part("n", "11"), false), "n");
  EXPECT_EQ(param_of(media_part("image", "x", "a.png") + media_part("n", "0"), false), "n");
  EXPECT_EQ(param_of(media_part("image", "x", "a.png") + media_part("response_format", "gif"), false), "response_format");
}

TEST(SimMediaOptions, UploadStoreAndSpeechOptions) {
  sim::options o;
  EXPECT_EQ(o.max_upload_bytes, 1024ull * 1024 * 1024);
  EXPECT_EQ(o.file_store_bytes, 64ull * 1024 * 1024);
  EXPECT_EQ(o.speech_rate, 0u);
  config::option_table table;
  o.register_options(table);
  auto r = table.apply_yaml_text("max-upload: 100MiB\nfile-store: 1MiB\nspeech-rate: 64KiB\n");
  ASSERT_TRUE(r) << r.err().message;
  EXPECT_EQ(o.max_upload_bytes, 100u * 1024 * 1024);
  EXPECT_EQ(o.file_store_bytes, 1024u * 1024);
  EXPECT_EQ(o.speech_rate, 64u * 1024);
  EXPECT_TRUE(o.validate());
  o.max_upload_bytes = 0;
  EXPECT_FALSE(o.validate());
}
