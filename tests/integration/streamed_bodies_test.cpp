// The streamed routes (ADR 0027) through a real gateway in front of the real simulator: uploads go
// upstream piece by piece and come back byte for byte, a speech download is the simulator's own
// bytes, every limit refuses with its own count, a client that leaves mid-upload frees the upstream
// at once, stored-object routes follow the tenant rule, and an upload is never sent twice.
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

#include "app/gateway.hpp"
#include "process.hpp"
#include "recording_upstream.hpp"
#include "sim/server.hpp"
#include "test_client.hpp"

using namespace sluice;
using test::bhttp::verb;

namespace {

namespace json = boost::json;

// Deterministic bytes of every value, CR, LF and '-' included (a multipart body must carry them).
std::string pattern_bytes(std::size_t n) {
  std::string out(n, '\0');
  std::uint32_t x = 2463534242u;
  for (auto& c : out) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c = static_cast<char>(x & 0xff);
  }
  return out;
}

constexpr std::string_view boundary = "sluice-test-boundary-7MA4YWxkTrZu0gW";

// A multipart/form-data body: text fields, then one file part.
std::string multipart(const std::vector<std::pair<std::string, std::string>>& fields, const std::string& file_field,
                      const std::string& filename, const std::string& content) {
  std::string b;
  for (const auto& [k, v] : fields)
    b += "--" + std::string(boundary) + "\r\nContent-Disposition: form-data; name=\"" + k + "\"\r\n\r\n" + v + "\r\n";
  b += "--" + std::string(boundary) + "\r\nContent-Disposition: form-data; name=\"" + file_field + "\"; filename=\"" +
       filename + "\"\r\nContent-Type: application/octet-stream\r\n\r\n" + content + "\r\n--" + std::string(boundary) + "--\r\n";
  return b;
}

std::string multipart_type() { return "multipart/form-data; boundary=" + std::string(boundary); }

// The head of an upload: with Content-Length, or chunked when `length` is nullopt.
std::string upload_head(const std::string& target, std::optional<std::size_t> length, const std::string& extra = "") {
  std::string h = "POST " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: " + multipart_type() + "\r\n" + extra;
  h += length ? "Content-Length: " + std::to_string(*length) + "\r\n" : std::string("Transfer-Encoding: chunked\r\n");
  return h + "\r\n";
}

// Sends `body` in 64 KiB writes (chunked: one chunk each), then reads the answer.
// The answer on `c`, after an interim 100 Continue when the head asked for one.
test::bhttp::response<test::bhttp::string_body> read_answer(test::client_socket& c) {
  boost::system::error_code ec;
  boost::beast::flat_buffer buf;
  std::optional<test::bhttp::response_parser<test::bhttp::string_body>> parser;
  do {
    parser.emplace();
    parser->body_limit(64 * 1024 * 1024);
    test::bhttp::read(c.sock, buf, *parser, ec);
  } while (!ec && parser->get().result_int() / 100 == 1);
  if (ec) {
    test::bhttp::response<test::bhttp::string_body> failed{test::bhttp::status::unknown, 11};
    failed.body() = "transport error: " + ec.message();
    return failed;
  }
  return parser->release();
}

test::bhttp::response<test::bhttp::string_body> upload(std::uint16_t port, const std::string& target, const std::string& body,
                                                       bool chunked, const std::string& extra = "") {
  test::client_socket c(port);
  c.send(upload_head(target, chunked ? std::nullopt : std::optional<std::size_t>(body.size()), extra));
  boost::system::error_code ec;
  for (std::size_t at = 0; at < body.size() && !ec; at += 64 * 1024) {
    const std::string_view piece = std::string_view(body).substr(at, 64 * 1024);
    if (chunked) {
      char line[32];
      std::snprintf(line, sizeof line, "%zx\r\n", piece.size());
      test::net::write(c.sock, test::net::buffer(std::string(line) + std::string(piece) + "\r\n"), ec);
    } else {
      test::net::write(c.sock, test::net::buffer(piece.data(), piece.size()), ec);
    }
  }
  if (chunked && !ec) test::net::write(c.sock, test::net::buffer(std::string_view("0\r\n\r\n")), ec);
  // A write that failed (the gateway refused the body and closed) still leaves its answer to read.
  return read_answer(c);
}

std::uint64_t metric(std::uint16_t port, const std::string& series) {
  const std::string text = test::call(port, verb::get, "/metrics").body();
  const auto at = text.find("\n" + series + " ");
  if (at == std::string::npos) return 0;
  return std::stoull(text.substr(at + series.size() + 2));
}

class StreamedBodies : public ::testing::Test {
 protected:
  void start(std::uint64_t max_upload = 64ull * 1024 * 1024, const std::string& keys = "",
             std::vector<std::string> upstreams = {}) {
    start_with([&](app::serve_options& go) {
      go.proxy.max_upload_bytes = max_upload;
      if (!keys.empty()) go.admission.keys_file = test::temp_file_with(keys);
      if (!upstreams.empty()) go.upstream.urls = upstreams;
    });
  }
  // The simulator and a gateway in front of it, with `adjust` applied to the gateway's options.
  void start_with(const std::function<void(app::serve_options&)>& adjust) {
    sim::options so;
    so.listen = "127.0.0.1:0";
    so.tokens = 3;
    sim_ = std::make_unique<sim::server>(so);
    auto sp = sim_->start();
    ASSERT_TRUE(sp.has_value()) << sp.err().message;
    sim_port_ = sp->port();
    app::serve_options go;
    go.http.listen = "127.0.0.1:0";
    go.http.threads = 1;
    go.upstream.urls = {"http://127.0.0.1:" + std::to_string(sim_port_)};
    go.upstream.key_env = "SLUICE_TEST_NO_SUCH_KEY";
    go.proxy.max_upload_bytes = 64ull * 1024 * 1024;
    adjust(go);
    ASSERT_TRUE(go.validate().has_value());
    auto made = app::gateway::make(go, "");
    ASSERT_TRUE(made.has_value()) << made.err().message;
    gateway_ = std::move(*made);
    auto gp = gateway_->start();
    ASSERT_TRUE(gp.has_value()) << gp.err().message;
    port_ = gp->port();
  }

  std::unique_ptr<sim::server> sim_;
  std::unique_ptr<app::gateway> gateway_;
  std::uint16_t sim_port_ = 0;
  std::uint16_t port_ = 0;
};

json::object object_of(const std::string& body) {
  error_code ec;
  auto v = json::parse(body, ec);
  if (ec || !v.is_object()) return {};
  return v.as_object();
}

}  // namespace

TEST_F(StreamedBodies, AFileUploadedInPiecesComesBackByteForByte) {
  start();
  const std::string content = pattern_bytes(3 * 1024 * 1024 + 17);
  for (const bool chunked : {false, true}) {
    const auto body = multipart({{"purpose", "batch"}}, "file", "data.jsonl", content);
    auto res = upload(port_, "/v1/files", body, chunked, "Expect: 100-continue\r\n");
    ASSERT_EQ(res.result_int(), 200u) << res.body();
    const auto file = object_of(res.body());
    ASSERT_TRUE(file.contains("id")) << res.body();
    EXPECT_EQ(file.at("bytes").to_number<std::uint64_t>(), content.size());
    EXPECT_EQ(file.at("filename").as_string(), "data.jsonl");
    const std::string id(file.at("id").as_string());
    auto back = test::call(port_, verb::get, "/v1/files/" + id + "/content");
    ASSERT_EQ(back.result_int(), 200u);
    EXPECT_TRUE(back.body() == content) << "the content came back changed (" << back.body().size() << " bytes)";
    auto listed = test::call(port_, verb::get, "/v1/files?limit=5");
    EXPECT_NE(listed.body().find(id), std::string::npos) << listed.body();
    EXPECT_EQ(test::call(port_, verb::delete_, "/v1/files/" + id).result_int(), 200u);
  }
  EXPECT_GE(sim_->snapshot().upload_bytes, 2 * content.size());
  // finish() counts a request once its answer is written: awaited, never read before it moves.
  EXPECT_LT(test::wait_until([&] { return metric(port_, R"(sluice_requests_total{outcome="ok",route="files"})") == 8; }).count(), 5000);
}

TEST_F(StreamedBodies, ATranscriptionsUsageIsChargedAndItsAudioStreamed) {
  start();
  const auto body = multipart({{"model", "whisper-1"}}, "file", "talk.wav", pattern_bytes(512 * 1024));
  auto res = upload(port_, "/v1/audio/transcriptions", body, true);
  ASSERT_EQ(res.result_int(), 200u) << res.body();
  const auto answer = object_of(res.body());
  ASSERT_TRUE(answer.contains("usage")) << res.body();
  const auto in = answer.at("usage").at("input_tokens").to_number<std::uint64_t>();
  EXPECT_LT(test::wait_until([&] { return metric(port_, R"(sluice_tokens_total{direction="prompt"})") == in; }).count(), 5000)
      << "the upstream's usage is charged";
  auto direct = upload(sim_port_, "/v1/audio/transcriptions", body, true);
  EXPECT_EQ(object_of(direct.body()).at("text"), answer.at("text")) << "the same call straight to the simulator";
  // Streamed, the usage comes in the last event: read as it passes, charged the same.
  const auto streamed_body = multipart({{"model", "whisper-1"}, {"stream", "true"}}, "file", "talk.wav", pattern_bytes(512 * 1024));
  auto streamed = upload(port_, "/v1/audio/transcriptions", streamed_body, false);
  ASSERT_EQ(streamed.result_int(), 200u) << streamed.body();
  EXPECT_EQ(streamed[test::bhttp::field::content_type].substr(0, 17), "text/event-stream");
  // The upstream sent no length: chunked to the client, never a body that ends only with the
  // connection (which held this keep-alive client until the idle timeout).
  EXPECT_EQ(streamed[test::bhttp::field::transfer_encoding], "chunked");
  const auto done_at = streamed.body().rfind("data: ");
  ASSERT_NE(done_at, std::string::npos) << streamed.body();
  const auto done = object_of(streamed.body().substr(done_at + 6));
  ASSERT_TRUE(done.contains("usage")) << streamed.body().substr(done_at);
  const auto in2 = done.at("usage").at("input_tokens").to_number<std::uint64_t>();
  EXPECT_LT(test::wait_until([&] { return metric(port_, R"(sluice_tokens_total{direction="prompt"})") == in + in2; }).count(), 5000)
      << "a streamed transcription's usage is charged too";
}

TEST_F(StreamedBodies, ASpeechDownloadIsTheSimulatorsOwnBytes) {
  start();
  const std::string request = R"({"model":"tts-1","input":"hello there","voice":"alloy"})";
  const std::vector<std::pair<std::string, std::string>> size{{"x-sim-speech-bytes", std::to_string(5 * 1024 * 1024 + 3)}};
  auto through = test::call(port_, verb::post, "/v1/audio/speech", request, size);
  auto direct = test::call(sim_port_, verb::post, "/v1/audio/speech", request, size);
  ASSERT_EQ(through.result_int(), 200u) << through.body().substr(0, 300);
  EXPECT_EQ(through[test::bhttp::field::content_type], "audio/mpeg");
  EXPECT_EQ(through.body().size(), 5u * 1024 * 1024 + 3);
  EXPECT_EQ(through[test::bhttp::field::content_length], std::to_string(5 * 1024 * 1024 + 3)) << "the upstream's length goes on";
  EXPECT_TRUE(through.body() == direct.body()) << "the gateway changed the audio";
  EXPECT_LT(test::wait_until([&] { return metric(port_, R"(sluice_requests_total{outcome="ok",route="audio"})") == 1; }).count(), 5000);
}

TEST_F(StreamedBodies, AnUploadPastMaxUploadBytesIsA413CountedAndNeverSentUpstream) {
  start(1024 * 1024);
  const auto body = multipart({{"purpose", "batch"}}, "file", "big.bin", pattern_bytes(2 * 1024 * 1024));
  auto by_length = upload(port_, "/v1/files", body, false);
  EXPECT_EQ(by_length.result_int(), 413u) << by_length.body();
  auto by_chunks = upload(port_, "/v1/audio/transcriptions", body, true);
  EXPECT_EQ(by_chunks.result_int(), 413u) << by_chunks.body();
  EXPECT_LT(test::wait_until([&] { return metric(port_, R"(sluice_rejections_total{reason="upload_too_large"})") == 2; }).count(), 5000);
  EXPECT_EQ(sim_->snapshot().files_stored, 0u);
  EXPECT_LT(sim_->snapshot().upload_bytes, 2u * 1024 * 1024) << "the chunked body was cut at the cap";
  // A JSON route keeps max-body-bytes (4 MiB): the upload cap does not widen it.
  test::client_socket json_route(port_);
  json_route.send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  "Content-Length: 5242880\r\n\r\n");
  EXPECT_NE(json_route.read_all().find(" 413 "), std::string::npos);
  EXPECT_LT(test::wait_until([&] { return metric(port_, R"(sluice_rejections_total{reason="too_large"})") == 1; }).count(), 5000);
}

TEST_F(StreamedBodies, AClientThatLeavesMidUploadFreesTheUpstreamAtOnce) {
  start();
  {
    test::client_socket c(port_);
    c.send(upload_head("/v1/files", 16 * 1024 * 1024));
    const std::string part = multipart({{"purpose", "batch"}}, "file", "x.bin", pattern_bytes(1024 * 1024));
    c.send(std::string_view(part).substr(0, 1024 * 1024));
    ASSERT_LT(test::wait_until([&] { return sim_->snapshot().upload_bytes > 0; }).count(), 5000)
        << "the upload's first bytes reach the upstream before the body ends";
    c.close();
  }
  EXPECT_LT(test::wait_until([&] { return sim_->snapshot().uploads_aborted == 1; }).count(), 5000)
      << "the upstream saw the upload end with the client";
  EXPECT_EQ(sim_->snapshot().files_stored, 0u);
  EXPECT_LT(test::wait_until([&] {
              return metric(port_, R"(sluice_requests_total{outcome="cancelled",route="files"})") == 1;
            }).count(), 5000);
}

TEST_F(StreamedBodies, StoredObjectRoutesFollowTheTenantRule) {
  start(64ull * 1024 * 1024, "sk-alpha-0001 10 100000 alpha\n");
  const std::vector<std::pair<std::string, std::string>> key{{"authorization", "Bearer sk-alpha-0001"}};
  auto files = test::call(port_, verb::get, "/v1/files", "", key);
  EXPECT_EQ(files.result_int(), 404u) << files.body();
  EXPECT_NE(files.body().find("stored in the upstream's account"), std::string::npos) << files.body();
  EXPECT_LT(test::wait_until([&] { return metric(port_, R"(sluice_rejections_total{reason="stored_objects"})") == 1; }).count(), 5000);
  auto speech = test::call(port_, verb::post, "/v1/audio/speech", R"({"model":"tts-1","input":"hi","voice":"alloy"})", key);
  EXPECT_EQ(speech.result_int(), 200u) << "audio stores nothing: served under client keys";
  auto anonymous = test::call(port_, verb::post, "/v1/audio/speech", R"({"model":"tts-1","input":"hi","voice":"alloy"})");
  EXPECT_EQ(anonymous.result_int(), 401u) << "and under their checks";
}

TEST_F(StreamedBodies, AnUploadThatReachedAnUpstreamIsNeverSentAgainButAReadIsRetried) {
  test::recording_upstream failing([](const test::recording_upstream::seen&) {
    return test::recording_upstream::response(503, R"({"error":{"message":"busy","type":"server_error"}})");
  });
  start(64ull * 1024 * 1024, "", {failing.url()});
  const auto body = multipart({{"model", "whisper-1"}}, "file", "a.wav", pattern_bytes(100 * 1024));
  auto res = upload(port_, "/v1/audio/transcriptions", body, false);
  EXPECT_EQ(res.result_int(), 503u) << res.body();
  EXPECT_EQ(res["x-sluice-attempts"], "1");
  ASSERT_EQ(failing.requests().size(), 1u) << "a 503 to a POST that reached the upstream is passed on, not retried";
  EXPECT_EQ(failing.requests()[0].body.size(), body.size()) << "the whole body went up, with its length";
  EXPECT_EQ(failing.requests()[0].header("content-type"), multipart_type());
  auto read = test::call(port_, verb::get, "/v1/files/file-1");
  EXPECT_EQ(read.result_int(), 503u);
  EXPECT_GT(std::stoul(std::string(read["x-sluice-attempts"])), 1u) << "a GET may be asked again";
  EXPECT_EQ(failing.requests().size(), 1u + std::stoul(std::string(read["x-sluice-attempts"])));
}

// body-timeout is a streamed upload's per-piece deadline: a client that stops mid-body gets a 408,
// and the upstream's half-sent upload ends with it.
TEST_F(StreamedBodies, AnUploadThatStallsPastBodyTimeoutIsA408AndFreesTheUpstream) {
  start_with([](app::serve_options& go) { go.http.body_timeout = std::chrono::milliseconds(300); });
  test::client_socket c(port_);
  c.send(upload_head("/v1/files", 4 * 1024 * 1024));
  const std::string part = multipart({{"purpose", "batch"}}, "file", "x.bin", pattern_bytes(256 * 1024));
  c.send(std::string_view(part).substr(0, 200 * 1024));
  const std::string answer = c.read_all();  // the gateway answers, then closes
  EXPECT_NE(answer.find(" 408 "), std::string::npos) << answer.substr(0, 200);
  EXPECT_LT(test::wait_until([&] { return sim_->snapshot().uploads_aborted == 1; }).count(), 5000);
  EXPECT_EQ(sim_->snapshot().files_stored, 0u);
}

// A client that leaves mid-download: the upstream's download stops at once (its connection is
// closed), and the request is counted as the client's leaving.
TEST_F(StreamedBodies, AClientThatLeavesMidDownloadStopsTheUpstream) {
  start();
  {
    test::client_socket c(port_);
    const std::string body = R"({"model":"tts-1","input":"hi","voice":"alloy"})";
    c.send("POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nx-sim-speech-bytes: 64MiB\r\n"
           "x-sim-speech-rate: 1MiB\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
    char buf[4096];
    boost::system::error_code ec;
    c.sock.read_some(test::net::buffer(buf), ec);  // the download has begun
    ASSERT_FALSE(ec) << ec.message();
    c.close();
  }
  EXPECT_LT(test::wait_until([&] {
              return metric(port_, R"(sluice_requests_total{outcome="cancelled",route="audio"})") == 1;
            }).count(), 5000);
  const auto sent = sim_->snapshot().download_bytes;
  EXPECT_LT(sent, 8u * 1024 * 1024) << "the upstream stopped long before its 64 MiB";
}
