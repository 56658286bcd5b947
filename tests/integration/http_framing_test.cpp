// HTTP/1.1 request framing over real sockets (RFC 9112), against the real binary: every
// Transfer-Encoding / Content-Length combination that could desynchronise a front proxy and
// sluice is refused and the connection closed; Host and the request-target forms; the
// request-line and header-field limits; and a refused upload that costs no more memory than the
// body cap, with its answer readable by the client (lingering close, not a reset).
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <string>
#include <thread>

#include <boost/json/parse.hpp>

#include "process.hpp"
#include "sim/server.hpp"
#include "test_client.hpp"

using namespace sluice;
using namespace std::chrono_literals;

namespace {

struct reply {
  std::string raw;
  bool closed = false;  // the gateway closed (EOF), rather than the read timing out

  std::string status_line() const { return raw.substr(0, raw.find("\r\n")); }
  std::string body() const {
    const auto at = raw.find("\r\n\r\n");
    return at == std::string::npos ? std::string() : raw.substr(at + 4);
  }
  std::size_t responses() const {
    // Status lines: at the start, or at a line start (an error message may name "HTTP/1.1").
    std::size_t n = raw.rfind("HTTP/1.", 0) == 0 ? 1 : 0;
    for (std::size_t at = 0; (at = raw.find("\nHTTP/1.", at)) != std::string::npos; at += 8) ++n;
    return n;
  }
};

// Sends `raw` on a fresh connection and reads until the gateway closes or `wait` passes.
reply send_raw(std::uint16_t port, const std::string& raw, int wait_ms = 1500) {
  test::client_socket c(port, wait_ms);
  c.send(raw);
  reply r;
  char buf[8192];
  while (true) {
    boost::system::error_code ec;
    const std::size_t n = c.sock.read_some(test::net::buffer(buf), ec);
    if (ec == test::net::error::eof) {
      r.closed = true;
      break;
    }
    if (ec) break;  // the receive timeout: still open
    r.raw.append(buf, n);
  }
  return r;
}

// The answer is an OpenAI-shaped error with this status, and the gateway closed the connection.
void expect_refused(const reply& r, const std::string& status_line, bool must_close = true) {
  EXPECT_EQ(r.status_line(), status_line) << r.raw;
  boost::system::error_code ec;
  auto v = boost::json::parse(r.body(), ec);
  ASSERT_FALSE(ec) << r.raw;
  const auto& e = v.at("error").as_object();
  EXPECT_TRUE(e.at("message").is_string());
  EXPECT_TRUE(e.at("type").is_string());
  EXPECT_TRUE(e.contains("param"));
  EXPECT_TRUE(e.contains("code"));
  EXPECT_NE(r.raw.find("application/json"), std::string::npos);
  if (must_close) {
    EXPECT_TRUE(r.closed) << "the connection must be closed after a framing error";
    EXPECT_EQ(r.responses(), 1u) << "nothing after the refusal is read as a request: " << r.raw;
    EXPECT_NE(r.raw.find("Connection: close"), std::string::npos);
  }
}

const std::string smuggled = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";

struct http_framing : ::testing::Test {
  static inline std::unique_ptr<sim::server> sim;
  static inline std::unique_ptr<test::child_process> gw;
  static inline std::uint16_t port = 0;

  static void SetUpTestSuite() {
    sim::options so;
    so.listen = "127.0.0.1:0";
    so.tokens = 2;
    so.token_delay = 0ms;
    sim = std::make_unique<sim::server>(so);
    ASSERT_TRUE(sim->start().has_value());
    gw = std::make_unique<test::child_process>(
        std::vector<std::string>{"serve", "--listen", "127.0.0.1:0", "--threads", "1", "--upstream",
                                 "http://127.0.0.1:" + std::to_string(sim->port()), "--max-attempts", "1"},
        std::vector<std::string>{"OPENAI_API_KEY=sk-upstream-test"});
    auto p = gw->wait_port();
    ASSERT_TRUE(p.has_value()) << gw->output();
    port = *p;
  }
  static void TearDownTestSuite() {
    gw.reset();
    sim.reset();
  }

  static double rejections(const std::string& reason) {
    const auto text = test::call(port, test::bhttp::verb::get, "/metrics").body();
    const std::string key = "sluice_rejections_total{reason=\"" + reason + "\"} ";
    const auto at = text.find(key);
    return at == std::string::npos ? -1 : std::stod(text.substr(at + key.size()));
  }
};

}  // namespace

// --- Transfer-Encoding and Content-Length ---------------------------------------------------

// Beast ignores a Transfer-Encoding whose last coding is not chunked and frames by Content-Length;
// a front proxy that honours the Transfer-Encoding sees a different body: the smuggled request
// after it would be answered as a second request.
TEST_F(http_framing, transfer_encoding_not_ending_in_chunked_is_400_and_close) {
  const double before = rejections("bad_framing");
  for (const std::string te : {"chunked, identity", "xchunked"}) {
    SCOPED_TRACE(te);
    const std::string body = "0\r\n\r\n";
    const auto r = send_raw(port, "POST /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: " + te +
                                      "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body + smuggled);
    expect_refused(r, "HTTP/1.1 400 Bad Request");
  }
  // Without a Content-Length too (the body would be read as empty, and the chunks as requests).
  expect_refused(send_raw(port, "POST /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n" + smuggled),
                 "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(rejections("bad_framing"), before + 3);
}

TEST_F(http_framing, a_coding_before_chunked_is_501_and_close) {
  expect_refused(send_raw(port, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
                                "0\r\n\r\n" + smuggled),
                 "HTTP/1.1 501 Not Implemented");
  // Two lines are one list.
  expect_refused(send_raw(port, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n"
                                "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled),
                 "HTTP/1.1 501 Not Implemented");
}

// Already refused by Beast before this change when chunked is the coding (kept as a guard).
TEST_F(http_framing, chunked_with_content_length_is_400_and_close_in_either_order) {
  expect_refused(send_raw(port, "POST /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n"
                                "0\r\n\r\n" + smuggled),
                 "HTTP/1.1 400 Bad Request");
  expect_refused(send_raw(port, "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
                                "0\r\n\r\n" + smuggled),
                 "HTTP/1.1 400 Bad Request");
}

// Differing Content-Lengths were already refused by Beast (a guard); identical ones are one value.
TEST_F(http_framing, content_lengths_that_differ_are_400) {
  expect_refused(send_raw(port, "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc"),
                 "HTTP/1.1 400 Bad Request");
  const auto same = send_raw(port, "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n"
                                   "Connection: close\r\n\r\nab");
  EXPECT_EQ(same.status_line(), "HTTP/1.1 200 OK") << same.raw;
}

// A well-framed chunked request is still served, and the connection kept: the pipelined request
// after it is answered too.
TEST_F(http_framing, plain_chunked_is_served) {
  const std::string body = test::chat_body(false);
  char size[16];
  std::snprintf(size, sizeof size, "%zx", body.size());
  const auto r = send_raw(port, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                "Transfer-Encoding: chunked\r\n\r\n" + std::string(size) + "\r\n" + body + "\r\n0\r\n\r\n" +
                                "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(r.status_line(), "HTTP/1.1 200 OK") << r.raw;
  EXPECT_NE(r.raw.find("HTTP/1.1 200 OK", 1), std::string::npos) << "the second request answered: " << r.raw;
  EXPECT_NE(r.raw.find("{\"status\":\"ok\"}"), std::string::npos) << r.raw;
  EXPECT_TRUE(r.closed);
}

// --- Host and the request target ------------------------------------------------------------

TEST_F(http_framing, http_1_1_without_host_is_400) {
  expect_refused(send_raw(port, "GET /healthz HTTP/1.1\r\n\r\n"), "HTTP/1.1 400 Bad Request");
  expect_refused(send_raw(port, "GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"), "HTTP/1.1 400 Bad Request");
  const auto old = send_raw(port, "GET /healthz HTTP/1.0\r\n\r\n");  // HTTP/1.0 had no Host
  EXPECT_EQ(old.status_line(), "HTTP/1.0 200 OK") << old.raw;
}

TEST_F(http_framing, absolute_form_is_served_as_its_path) {
  const std::string body = test::chat_body(false);
  const auto r = send_raw(port, "POST http://gw.example/v1/chat/completions HTTP/1.1\r\nHost: gw.example\r\n"
                                "Content-Type: application/json\r\nConnection: close\r\nContent-Length: " +
                                    std::to_string(body.size()) + "\r\n\r\n" + body);
  EXPECT_EQ(r.status_line(), "HTTP/1.1 200 OK") << r.raw;
  EXPECT_NE(r.raw.find("chat.completion"), std::string::npos) << r.raw;
  const auto health = send_raw(port, "GET HTTP://gw.example:8080/healthz?probe=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(health.status_line(), "HTTP/1.1 200 OK") << health.raw;
}

TEST_F(http_framing, authority_form_outside_connect_is_400_and_close) {
  expect_refused(send_raw(port, "GET gw.example:443 HTTP/1.1\r\nHost: gw.example\r\n\r\n" + smuggled),
                 "HTTP/1.1 400 Bad Request");
}

TEST_F(http_framing, connect_is_405_and_close) {
  expect_refused(send_raw(port, "CONNECT gw.example:443 HTTP/1.1\r\nHost: gw.example:443\r\n\r\n" + smuggled),
                 "HTTP/1.1 405 Method Not Allowed");
}

// --- limits -----------------------------------------------------------------------------------

TEST_F(http_framing, request_line_over_8kib_is_414) {
  const double before = rejections("request_line_too_long");
  // Within the head limit (16 KiB), and past it (the line alone is what is too long).
  for (std::size_t n : {std::size_t{9} * 1024, std::size_t{17} * 1024}) {
    SCOPED_TRACE(n);
    expect_refused(send_raw(port, "GET /healthz?" + std::string(n, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n"),
                   "HTTP/1.1 414 URI Too Long");
  }
  // At the limit: served. "GET " + target + " HTTP/1.1" is 8 KiB.
  const auto fits = send_raw(port, "GET /healthz?" + std::string(8 * 1024 - 4 - 9 - 9, 'a') +
                                       " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(fits.status_line(), "HTTP/1.1 200 OK") << fits.raw.substr(0, 200);
  EXPECT_EQ(rejections("request_line_too_long"), before + 2);
}

TEST_F(http_framing, more_than_100_header_fields_is_431) {
  auto with_fields = [](int n) {
    std::string raw = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n";
    for (int i = 2; i < n; ++i) raw += "x-f" + std::to_string(i) + ": v\r\n";
    return raw + "\r\n";
  };
  const double before = rejections("too_many_headers");
  EXPECT_EQ(send_raw(port, with_fields(100)).status_line(), "HTTP/1.1 200 OK");
  expect_refused(send_raw(port, with_fields(101)), "HTTP/1.1 431 Request Header Fields Too Large");
  expect_refused(send_raw(port, with_fields(200)), "HTTP/1.1 431 Request Header Fields Too Large");
  EXPECT_EQ(rejections("too_many_headers"), before + 2);
}

// --- a refused upload -------------------------------------------------------------------------


// A 24 MiB chunked upload against the 4 MiB cap: the client, which reads while it sends (as curl
// does), gets the whole 413 (not a reset), and the gateway's peak RSS grows by no more than the
// cap plus a read buffer. Before: the body string doubled past 3.75 MiB (about 8 MiB held).
// VmHWM is reset to the current RSS first (clear_refs 5), so the rise is this request's alone.
TEST_F(http_framing, refused_chunked_upload_costs_at_most_the_cap_and_its_413_is_readable) {
  const int pid = gw->pid();
  // Warm the allocator's arena with one small request first.
  EXPECT_EQ(send_raw(port, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").status_line(), "HTTP/1.1 200 OK");
  {
    std::ofstream clear("/proc/" + std::to_string(pid) + "/clear_refs");
    clear << "5";
  }
  const std::uint64_t rss_before = test::proc_status_kib(pid, "VmHWM");
  ASSERT_GT(rss_before, 0u);

  test::client_socket c(port, 5000);
  c.send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
         "Transfer-Encoding: chunked\r\n\r\n");
  std::atomic<bool> stop{false};
  std::atomic<std::size_t> sent{0};
  std::thread writer([&] {
    const std::size_t piece = 64 * 1024;
    char head[16];
    std::snprintf(head, sizeof head, "%zx\r\n", piece);
    const std::string chunk = head + std::string(piece, 'a') + "\r\n";
    while (sent < (24u << 20) && !stop) {
      boost::system::error_code ec;
      test::net::write(c.sock, test::net::buffer(chunk), ec);
      if (ec) break;  // the gateway closed after its answer
      sent += piece;
    }
  });
  std::string raw;
  char buf[8192];
  boost::system::error_code ec;
  while (true) {
    const std::size_t n = c.sock.read_some(test::net::buffer(buf), ec);
    if (ec) break;
    raw.append(buf, n);
    if (raw.find("}}") != std::string::npos) stop = true;  // the whole error body: stop sending
  }
  stop = true;
  writer.join();
  EXPECT_EQ(ec, test::net::error::eof) << "an orderly close after the answer, not " << ec.message();
  reply r{raw, ec == test::net::error::eof};
  expect_refused(r, "HTTP/1.1 413 Payload Too Large");
  EXPECT_GE(sent.load(), std::size_t{4} << 20);

  const std::uint64_t peak = test::proc_status_kib(pid, "VmHWM");
  const std::uint64_t rise_kib = peak > rss_before ? peak - rss_before : 0;
  RecordProperty("rss_rise_kib", std::to_string(rise_kib));
  // cap (4096 KiB) + the small first body buffer (64 KiB) + read buffers and the coroutine's
  // allocations; 1 MiB of slack for the allocator (Release: 4,112 KiB seen at 0536ffbc). Under
  // ASan, whose redzones and quarantine of freed blocks count in RSS, the rise is larger and
  // noisier (5.2 MiB seen before the streamed-body seam, 6.4-7.6 MiB after it while Release stayed
  // at cap + 16 KiB): its bound is the cap's double. Before the fix (doubling growth): ~7.5-8 MiB
  // in Release.
#if defined(__SANITIZE_ADDRESS__)
  constexpr std::uint64_t slack_kib = 4096;
#else
  constexpr std::uint64_t slack_kib = 1024;
#endif
  EXPECT_LE(rise_kib, 4096u + slack_kib) << "peak RSS rose by " << rise_kib << " KiB for a 4 MiB cap";
}

// A head over the limit while the client keeps sending: the 431 is read, then an orderly close.
TEST_F(http_framing, oversized_head_is_answered_before_the_close) {
  test::client_socket c(port, 5000);
  std::string head = "GET /healthz HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 400; ++i) head += "x-filler-" + std::to_string(i) + ": " + std::string(100, 'b') + "\r\n";
  c.send(head);  // 40 KiB of fields, no end
  std::string raw;
  char buf[8192];
  boost::system::error_code ec;
  while (true) {
    const std::size_t n = c.sock.read_some(test::net::buffer(buf), ec);
    if (ec) break;
    raw.append(buf, n);
  }
  EXPECT_EQ(ec, test::net::error::eof) << ec.message();
  expect_refused(reply{raw, ec == test::net::error::eof}, "HTTP/1.1 431 Request Header Fields Too Large");
}

// Found by the http_request fuzzer (2026-12-02): a chunked body whose only chunk is the final one,
// sent as "0\r\n", then "\r", then "\n", made Beast 1.81's parser assert (boostorg/beast#2861): a
// debug build of the gateway (the sanitizer build) aborted. The reader now holds a chunked body's
// last bytes until five are there (http::hold_body_bytes); the request is answered and the gateway
// lives on.
TEST_F(http_framing, a_final_chunk_sent_a_byte_at_a_time_is_answered) {
  for (const std::string& head_and_body : {std::string("0\r\n"), std::string("")}) {
    test::client_socket c(port, 3000);
    c.send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           "Connection: close\r\nTransfer-Encoding: chunked\r\n\r\n" + head_and_body);
    std::string rest = head_and_body.empty() ? "0\r\n\r\n" : "\r\n";
    for (char ch : rest) {
      std::this_thread::sleep_for(60ms);  // each piece its own read on the gateway's side
      c.send(std::string(1, ch));
    }
    const std::string got = c.read_all();
    EXPECT_EQ(got.substr(0, 12), "HTTP/1.1 400") << "an empty body is not a chat request: " << got;
  }
  EXPECT_EQ(test::call(port, test::bhttp::verb::get, "/healthz").result_int(), 200u) << "the gateway lives on";
}
