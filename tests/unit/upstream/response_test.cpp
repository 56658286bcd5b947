// upstream::response::forget_head(): the head's fields are given back while the status and the
// body's framing (chunked here) stay, so the body decodes to its end as before. The bytes are put
// in the connection's buffer as a socket read would leave them; the socket is never opened.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include <boost/asio/buffer.hpp>

#include "upstream/client.hpp"
#include "upstream/connection.hpp"
#include "upstream/framing.hpp"

using namespace sluice;
using namespace sluice::upstream;

namespace {
// A connection whose buffer holds `bytes` and whose parser has read the head in them.
std::unique_ptr<connection> with_parsed_head(net::io_context& io, std::string_view bytes) {
  auto c = std::make_unique<connection>(io.get_executor(), 8192);
  c->reset_parser(8192);
  auto& buf = c->buffer();
  buf.commit(net::buffer_copy(buf.prepare(bytes.size()), net::buffer(bytes.data(), bytes.size())));
  EXPECT_FALSE(parse_head(c->parser(), buf));
  EXPECT_TRUE(c->parser().is_header_done());
  return c;
}

std::string read_all_buffered(response& r) {
  std::string out;
  char chunk[64];
  while (true) {
    auto n = r.read_buffered(chunk, sizeof chunk);
    EXPECT_TRUE(n.has_value());
    if (!n || *n == 0) break;
    out.append(chunk, *n);
  }
  return out;
}
}  // namespace

TEST(upstream_response, forgetting_the_head_keeps_the_status_and_the_body) {
  net::io_context io;
  const std::string wire =
      "HTTP/1.1 200 OK\r\n"
      "Content-Type: text/event-stream\r\n"
      "Transfer-Encoding: chunked\r\n"
      "X-Ratelimit-Remaining-Requests: 4999\r\n"
      "Openai-Processing-Ms: 12\r\n"
      "\r\n"
      "e\r\ndata: {\"a\":1}\n\r\n"
      "e\r\ndata: [DONE]\n\n\r\n"
      "0\r\n\r\n";
  abort_handle abort;
  response r(with_parsed_head(io, wire), {}, abort);
  ASSERT_EQ(r.head()["x-ratelimit-remaining-requests"], "4999");

  r.forget_head();

  EXPECT_TRUE(r.head().begin() == r.head().end()) << "no field is left";
  EXPECT_EQ(r.status(), 200u);
  EXPECT_FALSE(r.done());
  EXPECT_EQ(read_all_buffered(r), "data: {\"a\":1}\ndata: [DONE]\n\n") << "the chunked framing outlives the fields";
  EXPECT_TRUE(r.done());
}

TEST(upstream_response, a_forgotten_head_keeps_a_content_length) {
  net::io_context io;
  const std::string wire = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 7\r\n\r\ndata: x";
  abort_handle abort;
  response r(with_parsed_head(io, wire), {}, abort);
  r.forget_head();
  EXPECT_EQ(r.content_length(), std::optional<std::uint64_t>(7));
  EXPECT_EQ(read_all_buffered(r), "data: x");
  EXPECT_TRUE(r.done());
}
