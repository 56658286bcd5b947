// Upstream response framing on canned bytes (upstream/framing.hpp): the head, then a body framed by
// Content-Length, chunked encoding or the connection's close, fed to the parser split at every
// offset and in random pieces; the body bytes that come out are always the same, and malformed
// framing is an error, never a silent truncation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "upstream/framing.hpp"

using namespace sluice;
using namespace sluice::upstream;

namespace {

struct decoded {
  bool head_ok = false;
  bool done = false;
  bool failed = false;
  unsigned status = 0;
  std::string body;
};

// Feeds `wire` in the pieces `cuts` makes (sorted offsets), decoding after each piece into a small
// destination (so one piece may need several decodes), then signals the end of input if `eof`.
decoded feed(const std::string& wire, const std::vector<std::size_t>& cuts, bool eof, std::size_t dst_size = 7) {
  decoded out;
  response_parser p;
  p.header_limit(8192);
  p.body_limit(boost::none);
  boost::beast::flat_buffer buf;
  std::vector<char> dst(dst_size);
  std::size_t at = 0;
  auto pieces = cuts;
  pieces.push_back(wire.size());
  for (std::size_t end : pieces) {
    if (end < at) continue;
    if (end > at) {
      auto space = buf.prepare(end - at);
      std::memcpy(space.data(), wire.data() + at, end - at);
      buf.commit(end - at);
    }
    at = end;
    if (!p.is_header_done()) {
      if (auto ec = parse_head(p, buf)) {
        out.failed = true;
        return out;
      }
      if (!p.is_header_done()) continue;
      out.head_ok = true;
      out.status = p.get().result_int();
    }
    while (true) {
      auto n = decode_buffered(p, buf, dst.data(), dst.size());
      if (!n) {
        out.failed = true;
        return out;
      }
      if (*n == 0) break;
      out.body.append(dst.data(), *n);
    }
  }
  if (eof && p.is_header_done() && !p.is_done() && !end_of_input(p)) out.failed = true;
  out.done = p.is_header_done() && p.is_done();
  return out;
}

std::string chunk(const std::string& data) {
  char size[16];
  std::snprintf(size, sizeof size, "%zx", data.size());
  return std::string(size) + "\r\n" + data + "\r\n";
}

// Multi-byte UTF-8 inside the first chunk; the second event spread over two chunks.
const std::string chunked_payload = "data: {\"a\":\"\xc3\xa9\xe2\x82\xac\"}\n\ndata: [DONE]\n\n";
const std::string chunked_body = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
                                 chunk(chunked_payload.substr(0, 21)) + chunk(chunked_payload.substr(21, 7)) +
                                 chunk(chunked_payload.substr(28)) + "0\r\n\r\n";

}  // namespace

TEST(upstream_framing, chunked_body_split_at_every_offset) {
  const auto whole = feed(chunked_body, {}, false);
  ASSERT_TRUE(whole.head_ok);
  ASSERT_FALSE(whole.failed);
  EXPECT_TRUE(whole.done);
  EXPECT_EQ(whole.status, 200u);
  EXPECT_EQ(whole.body, chunked_payload);
  for (std::size_t cut = 0; cut <= chunked_body.size(); ++cut) {
    const auto d = feed(chunked_body, {cut}, false);
    EXPECT_FALSE(d.failed) << "cut at " << cut;
    EXPECT_TRUE(d.done) << "cut at " << cut;
    EXPECT_EQ(d.body, chunked_payload) << "cut at " << cut;
  }
}

TEST(upstream_framing, random_multi_splits_and_one_byte_reads) {
  std::mt19937 rng(7);
  for (int round = 0; round < 300; ++round) {
    std::vector<std::size_t> cuts;
    const int n = std::uniform_int_distribution<int>(1, 12)(rng);
    for (int i = 0; i < n; ++i) cuts.push_back(std::uniform_int_distribution<std::size_t>(0, chunked_body.size())(rng));
    std::sort(cuts.begin(), cuts.end());
    const auto d = feed(chunked_body, cuts, false, 1 + round % 9);
    EXPECT_EQ(d.body, chunked_payload) << "round " << round;
    EXPECT_TRUE(d.done);
  }
  std::vector<std::size_t> every;
  for (std::size_t i = 1; i < chunked_body.size(); ++i) every.push_back(i);
  EXPECT_EQ(feed(chunked_body, every, false, 1).body, chunked_payload);
}

TEST(upstream_framing, content_length_and_close_delimited_bodies) {
  const std::string cl = "HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world";
  for (std::size_t cut = 0; cut <= cl.size(); ++cut) {
    const auto d = feed(cl, {cut}, false);
    EXPECT_EQ(d.body, "hello world") << cut;
    EXPECT_TRUE(d.done) << cut;
  }
  // No length, no chunking, HTTP/1.0-style: the body ends when the connection does.
  const std::string closed = "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end";
  const auto d = feed(closed, {20, 40}, true);
  EXPECT_FALSE(d.failed);
  EXPECT_TRUE(d.done);
  EXPECT_EQ(d.body, "until the end");
}

TEST(upstream_framing, a_body_cut_short_is_an_error_not_an_end) {
  const std::string cl = "HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\nonly ten b";
  const auto short_cl = feed(cl, {}, true);
  EXPECT_TRUE(short_cl.failed);
  EXPECT_FALSE(short_cl.done);
  const std::string cut_chunk = chunked_body.substr(0, chunked_body.size() - 7);  // no last chunk
  const auto d = feed(cut_chunk, {}, true);
  EXPECT_TRUE(d.failed);
  EXPECT_FALSE(d.done);
}

TEST(upstream_framing, malformed_framing_is_refused) {
  for (const std::string& bad :
       {std::string("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n"),
        std::string("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n0\r\n\r\n"),
        std::string("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello"),
        std::string("HTTP/1.1 2OO OK\r\n\r\n"), std::string("NOTHTTP\r\n\r\n")}) {
    const auto d = feed(bad, {}, true);
    EXPECT_TRUE(d.failed) << bad;
  }
}

TEST(upstream_framing, an_error_status_head_is_read_like_any_other) {
  const std::string h = "HTTP/1.1 429 Too Many Requests\r\nretry-after: 2\r\nContent-Length: 2\r\n\r\n{}";
  const auto d = feed(h, {5}, false);
  EXPECT_EQ(d.status, 429u);
  EXPECT_EQ(d.body, "{}");
}
