// flood against a tiny in-process SSE server (Beast, 127.0.0.1:0) whose behaviour each request
// picks with an `x-test` header: good, truncated, malformed, error events, 503s, slow and endless
// streams. Checks that every failure kind is classified and that the run always ends by itself.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <chrono>
#include <set>
#include <string>
#include <thread>

#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>

#include "loadgen/loadgen.hpp"
#include "runtime/asio.hpp"
#include "test_client.hpp"

using namespace sluice;
using namespace std::chrono_literals;
namespace bhttp = boost::beast::http;

namespace {

class sse_server {
 public:
  sse_server() : acceptor_(ioc_, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0)) {
    net::co_spawn(ioc_, accept_loop(this), net::detached);
    thread_ = std::thread([this] { ioc_.run(); });
  }
  ~sse_server() {
    ioc_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port()); }

  std::atomic<int> requests{0};

  // Streams that ended because the client closed first, and streams written to the end and then
  // closed by the client. They settle a moment after loadgen::run returns, hence the waits.
  int client_gone() const { return read(gone_); }
  int completed() const { return read(completed_); }
  bool wait_for(const int& counter, int n, std::chrono::milliseconds timeout = 5000ms) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return counter >= n; });
  }
  bool wait_gone(int n) { return wait_for(gone_, n); }
  bool wait_requests(int n) { return wait_for(requests_, n); }
  bool wait_completed(int n) { return wait_for(completed_, n); }
  // The client addresses connections came from.
  std::set<std::string> sources() const {
    std::lock_guard lock(mutex_);
    return sources_;
  }

 private:
  static task<void> accept_loop(sse_server* self) {
    for (;;) {
      error_code ec;
      tcp::socket s = co_await self->acceptor_.async_accept(ec_out(ec));
      if (ec) co_return;
      if (auto peer = s.remote_endpoint(ec); !ec) {
        std::lock_guard lock(self->mutex_);
        self->sources_.insert(peer.address().to_string());
      }
      net::co_spawn(self->ioc_, session(std::move(s), self), net::detached);
    }
  }

  static std::string chunked(std::string_view data) {
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    return std::string(size) + std::string(data) + "\r\n";
  }
  static std::string event(int i) {
    return "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tok" + std::to_string(i) +
           "\"}}]}\n\n";
  }

  static task<void> session(tcp::socket sock, sse_server* self) {
    boost::beast::flat_buffer buf;
    bhttp::request<bhttp::string_body> req;
    error_code ec;
    co_await bhttp::async_read(sock, buf, req, ec_out(ec));
    if (ec) co_return;
    ++self->requests;
    self->bump(self->requests_);
    const std::string scenario(req["x-test"]);
    const int events = req["x-test-events"].empty() ? 5 : std::stoi(std::string(req["x-test-events"]));
    const auto gap = std::chrono::milliseconds(req["x-test-gap-ms"].empty() ? 0 : std::stoi(std::string(req["x-test-gap-ms"])));
    net::steady_timer timer(sock.get_executor());

    std::string head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
    if (scenario == "503") {
      const std::string body = R"({"error":{"message":"overloaded","type":"server_error"}})";
      std::string r = "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: application/json\r\n"
                      "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
      co_await net::async_write(sock, net::buffer(r), ec_out(ec));
      co_return;
    }
    if (scenario == "429") {
      std::string r = "HTTP/1.1 429 Too Many Requests\r\nContent-Length: 0\r\n\r\n";
      co_await net::async_write(sock, net::buffer(r), ec_out(ec));
      co_return;
    }
    if (scenario == "json-content-type") head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
    if (scenario == "non-stream") {
      const std::string body = R"({"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}]})";
      head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
             "\r\n\r\n" + body;
    }
    co_await net::async_write(sock, net::buffer(head), ec_out(ec));
    if (ec || scenario == "json-content-type" || scenario == "non-stream") co_return;

    for (int i = 0; scenario == "endless" || i < events; ++i) {
      std::string piece;
      if (scenario == "malformed" && i == 1) piece = chunked("data: {\"choices\": [oops\n\n");
      else if (scenario == "error-event" && i == 1) piece = chunked("data: {\"error\":{\"message\":\"upstream failed\"}}\n\n");
      else piece = chunked(event(i));
      co_await net::async_write(sock, net::buffer(piece), ec_out(ec));
      if (ec) {
        self->bump(self->gone_);
        co_return;
      }
      if (gap > 0ms) {
        timer.expires_after(gap);
        co_await timer.async_wait(ec_out(ec));
      }
    }
    if (scenario == "truncated") co_return;  // close without [DONE]
    std::string tail = chunked("data: [DONE]\n\n");
    if (scenario != "done-then-cut") tail += "0\r\n\r\n";
    co_await net::async_write(sock, net::buffer(tail), ec_out(ec));
    if (ec) {
      self->bump(self->gone_);
      co_return;
    }
    if (scenario == "done-then-cut") co_return;
    // Wait for the client to close so that `completed` counts streams it read to the end.
    char byte;
    co_await sock.async_read_some(net::buffer(&byte, 1), ec_out(ec));
    self->bump(self->completed_);
  }

  int read(const int& counter) const {
    std::lock_guard lock(mutex_);
    return counter;
  }
  void bump(int& counter) {
    std::lock_guard lock(mutex_);
    ++counter;
    changed_.notify_all();
  }

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  int gone_ = 0, completed_ = 0, requests_ = 0;
  std::set<std::string> sources_;
  net::io_context ioc_;
  tcp::acceptor acceptor_;
  std::thread thread_;
};

loadgen::options base(const sse_server& srv, const std::string& scenario, std::uint64_t n = 4) {
  loadgen::options o;
  o.target = srv.url();
  o.concurrency = n;
  o.duration_limit = 20s;
  o.threads = 2;
  o.progress = false;
  o.headers = {"x-test: " + scenario};
  return o;
}

loadgen::report run_ok(const loadgen::options& o) {
  auto r = loadgen::run(o);
  EXPECT_TRUE(r) << (r ? "" : r.err().message);
  return r ? *r : loadgen::report{};
}

void expect_ordered(const loadgen::percentiles& p) {
  EXPECT_LE(p.p50_ms, p.p90_ms);
  EXPECT_LE(p.p90_ms, p.p99_ms);
  EXPECT_LE(p.p99_ms, p.max_ms);
}

}  // namespace

TEST(loadgen, good_streams_are_ok_with_sane_timings) {
  sse_server srv;
  auto o = base(srv, "good", 8);
  o.headers.push_back("x-test-events: 10");
  o.headers.push_back("x-test-gap-ms: 20");
  o.requests = 16;
  auto r = run_ok(o);
  EXPECT_EQ(r.requests, 16u);
  EXPECT_EQ(r.ok, 16u) << loadgen::format_text(r);
  EXPECT_EQ(r.failed, 0u);
  EXPECT_TRUE(loadgen::all_ok(r));
  EXPECT_EQ(r.status_counts[200], 16u);
  EXPECT_EQ(r.chunks, 160u);
  EXPECT_GT(r.bytes, 160u * 60);
  EXPECT_LE(r.peak_open_streams, 8u);
  EXPECT_GE(r.peak_open_streams, 2u);
  EXPECT_EQ(r.ttft.count, 16u);
  EXPECT_EQ(r.e2e.count, 16u);
  EXPECT_EQ(r.gap.count, 16u * 9);
  expect_ordered(r.ttft);
  expect_ordered(r.gap);
  expect_ordered(r.e2e);
  // The server pauses 20 ms after each event: gaps cluster there, a stream takes ~10 of them.
  EXPECT_GE(r.gap.p50_ms, 15.0);
  EXPECT_LT(r.gap.p50_ms, 200.0);
  EXPECT_GE(r.e2e.p50_ms, 9 * 15.0);
  EXPECT_LT(r.ttft.p50_ms, r.e2e.p50_ms);
  EXPECT_GT(r.chunks_per_second, 0.0);
  EXPECT_TRUE(srv.wait_completed(16));
  EXPECT_EQ(srv.client_gone(), 0);
}

TEST(loadgen, each_failure_kind_is_classified) {
  sse_server srv;
  struct kase {
    const char* scenario;
    std::uint64_t loadgen::report::*counter;
  };
  for (auto [scenario, counter] : {kase{"truncated", &loadgen::report::truncated},
                                   kase{"done-then-cut", &loadgen::report::truncated},
                                   kase{"malformed", &loadgen::report::malformed},
                                   kase{"json-content-type", &loadgen::report::malformed},
                                   kase{"error-event", &loadgen::report::error_events},
                                   kase{"503", &loadgen::report::status_errors},
                                   kase{"429", &loadgen::report::status_errors}}) {
    auto r = run_ok(base(srv, scenario, 3));
    EXPECT_EQ(r.*counter, 3u) << scenario << "\n" << loadgen::format_text(r);
    EXPECT_EQ(r.failed, 3u) << scenario;
    EXPECT_EQ(r.ok, 0u) << scenario;
    EXPECT_FALSE(loadgen::all_ok(r));
    EXPECT_FALSE(r.failure_samples.empty());
  }
}

TEST(loadgen, status_histogram_and_retry_after) {
  sse_server srv;
  auto r = run_ok(base(srv, "503", 5));
  EXPECT_EQ(r.status_counts[503], 5u);
  EXPECT_EQ(r.retry_after_seen, 5u);
  r = run_ok(base(srv, "429", 2));
  EXPECT_EQ(r.status_counts[429], 2u);
  EXPECT_EQ(r.retry_after_seen, 0u) << "this 429 carries no Retry-After";
}

TEST(loadgen, connect_errors_when_nothing_listens) {
  test::refused_port refused;
  loadgen::options o;
  o.target = refused.url();
  o.concurrency = 3;
  o.progress = false;
  auto r = run_ok(o);
  EXPECT_EQ(r.connect_errors, 3u);
  EXPECT_EQ(r.failed, 3u);
  EXPECT_TRUE(r.status_counts.empty());
}

TEST(loadgen, non_stream_responses) {
  sse_server srv;
  auto o = base(srv, "non-stream", 3);
  o.stream = false;
  auto r = run_ok(o);
  EXPECT_EQ(r.ok, 3u) << loadgen::format_text(r);
  EXPECT_EQ(r.chunks, 0u);
  EXPECT_EQ(r.e2e.count, 3u);
  // The same body is not acceptable to a streaming client.
  r = run_ok(base(srv, "non-stream", 1));
  EXPECT_EQ(r.malformed, 1u);
}

TEST(loadgen, duration_stops_a_run_that_never_ends) {
  sse_server srv;
  auto o = base(srv, "endless", 4);
  o.headers.push_back("x-test-gap-ms: 10");
  o.duration_limit = 500ms;
  o.requests = 100;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run_ok(o);
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(r.timeouts, 4u) << loadgen::format_text(r);
  EXPECT_EQ(r.requests, 4u) << "no new request starts after the deadline";
  EXPECT_GT(r.chunks, 4u);
  EXPECT_GE(r.wall_seconds, 0.45);
  EXPECT_LT(took, 5s);
}

TEST(loadgen, cancel_ends_the_run_early_and_still_reports) {
  sse_server srv;
  auto o = base(srv, "endless", 3);
  o.headers.push_back("x-test-gap-ms: 10");
  std::atomic<bool> cancel{false};
  o.cancel = &cancel;
  std::thread canceller([&] {
    srv.wait_requests(3);
    cancel.store(true);
  });
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run_ok(o);
  canceller.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s) << "the 20 s deadline was not needed";
  EXPECT_EQ(r.timeouts, 3u) << loadgen::format_text(r);
  EXPECT_EQ(r.requests, 3u);
}

TEST(loadgen, abandon_closes_after_k_chunks) {
  sse_server srv;
  auto o = base(srv, "good", 4);
  o.headers.push_back("x-test-events: 50");
  o.headers.push_back("x-test-gap-ms: 10");
  o.read_mode = loadgen::mode::abandon;
  o.abandon_after = 3;
  auto r = run_ok(o);
  EXPECT_EQ(r.abandoned_ok, 4u) << loadgen::format_text(r);
  EXPECT_EQ(r.failed, 0u);
  EXPECT_TRUE(loadgen::all_ok(r));
  EXPECT_GE(r.chunks, 12u);
  EXPECT_LT(r.chunks, 4u * 50);
  // The server sees each client leave mid-stream (its next write fails).
  EXPECT_TRUE(srv.wait_gone(4));
  EXPECT_EQ(srv.client_gone(), 4);
  EXPECT_EQ(srv.completed(), 0);
}

TEST(loadgen, never_read_holds_then_closes) {
  sse_server srv;
  auto o = base(srv, "endless", 3);
  o.read_mode = loadgen::mode::never_read;
  o.hold = 300ms;
  auto r = run_ok(o);
  EXPECT_EQ(r.abandoned_ok, 3u) << loadgen::format_text(r);
  EXPECT_EQ(r.chunks, 0u) << "never-read verifies the head only";
  EXPECT_EQ(r.status_counts[200], 3u);
  EXPECT_GE(r.wall_seconds, 0.29);
  EXPECT_EQ(r.peak_open_streams, 3u);
}

TEST(loadgen, slow_reader_reads_small_pieces_and_still_verifies) {
  sse_server srv;
  auto o = base(srv, "good", 2);
  o.headers.push_back("x-test-events: 6");
  o.read_mode = loadgen::mode::slow;
  o.read_size = 7;
  o.read_delay = 1ms;
  auto r = run_ok(o);
  EXPECT_EQ(r.ok, 2u) << loadgen::format_text(r);
  EXPECT_EQ(r.chunks, 12u);
  // Every byte took its own 7-byte read with a pause: a 6-event stream cannot finish in 1 read.
  EXPECT_GT(r.e2e.p50_ms, static_cast<double>(r.bytes / 2 / 7) * 1.0 * 0.9);
}

TEST(loadgen, samples_rss_of_a_process) {
  sse_server srv;
  auto o = base(srv, "good", 2);
  o.headers.push_back("x-test-gap-ms: 20");
  o.pid = static_cast<std::uint64_t>(getpid());
  auto r = run_ok(o);
  EXPECT_GT(r.baseline_rss_bytes, 0u);
  EXPECT_GE(r.peak_rss_bytes, r.baseline_rss_bytes);
  const auto text = loadgen::format_text(r);
  EXPECT_NE(text.find("target rss"), std::string::npos) << text;
}

TEST(loadgen, json_report_has_every_field) {
  sse_server srv;
  auto r = run_ok(base(srv, "503", 1));
  const std::string j = loadgen::format_json(r);
  for (const char* key : {"\"requests\":1", "\"ok\":0", "\"failed\":1", "\"status_counts\":{\"503\":1}",
                          "\"retry_after_seen\":1", "\"ttft\":{", "\"p99_ms\"", "\"peak_rss_bytes\"",
                          "\"rss_per_stream\"", "\"chunks_per_second\"", "\"wall_seconds\"", "\"status\":1"})
    EXPECT_NE(j.find(key), std::string::npos) << key << " in " << j;
}

// --source-ips spreads the connections over 127.0.0.1, .2, ... (each with its own ephemeral port
// range); without it every connection comes from 127.0.0.1.
TEST(loadgen, source_ips_spread_connections_over_loopback_addresses) {
  sse_server srv;
  auto o = base(srv, "good", 3);
  o.requests = 9;
  o.source_ips = 3;
  auto r = run_ok(o);
  EXPECT_EQ(r.ok, 9u) << loadgen::format_text(r);
  EXPECT_EQ(srv.sources(), (std::set<std::string>{"127.0.0.1", "127.0.0.2", "127.0.0.3"}));

  sse_server plain;
  auto p = base(plain, "good", 3);
  p.requests = 6;
  auto rp = run_ok(p);
  EXPECT_EQ(rp.ok, 6u);
  EXPECT_EQ(plain.sources(), (std::set<std::string>{"127.0.0.1"}));

  auto away = base(srv, "good", 1);
  away.target = "http://192.0.2.1:80";  // TEST-NET-1: never reached, the option is refused first
  away.source_ips = 2;
  auto refused = loadgen::run(away);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.err().message.find("source-ips"), std::string::npos) << refused.err().message;
}

TEST(loadgen, rejects_bad_options_before_running) {
  loadgen::options o;
  o.target = "https://127.0.0.1:1";
  EXPECT_FALSE(loadgen::run(o));
  o.target = "http://no-such-host.invalid:80";
  EXPECT_FALSE(loadgen::run(o));
}
