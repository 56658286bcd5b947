// http::connection's streamed request body (read_body_some, ADR 0027) on its own, over a real socket
// pair on 127.0.0.1, with the test deciding when each byte arrives.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include "http/body_policy.hpp"
#include "http/connection.hpp"
#include "test_client.hpp"

using namespace sluice;
using namespace std::chrono_literals;

namespace {

struct stream_every_body final : http::body_policy {
  std::uint64_t streamed_body_cap(const http::request&) const noexcept override { return 1024 * 1024; }
};

}  // namespace

// A chunked body whose payload filled the handler's piece exactly, and whose last line
// ("0\r\n\r\n") came after that piece was read: the read that takes the last line gives no byte, and
// the body has ended there. It waited for more bytes instead, until body-timeout, and the request
// was answered 408 (one run in a few of StreamedBodies.ATranscriptionsUsageIsChargedAndItsAudioStreamed).
TEST(BodyRead, TheReadThatTakesAChunkedBodysLastLineEndsIt) {
  test::net::io_context io;
  test::tcp::acceptor a(io, test::tcp::endpoint(test::net::ip::make_address("127.0.0.1"), 0));
  test::tcp::socket peer(io);
  peer.connect(a.local_endpoint());
  http::server_options opts;
  opts.body_timeout = 3s;  // a wrong wait ends as a 408 instead of hanging the test
  http::connection conn(a.accept(), opts);
  stream_every_body policy;

  const std::string head = "POST /v1/files HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  test::net::write(peer, test::net::buffer(head + "8\r\npppppppp\r\n"));
  bool head_read = false;
  std::optional<result<std::size_t>> first;
  std::optional<result<std::size_t>> second;
  char piece[8];
  net::co_spawn(io, [&]() -> task<void> {
    auto req = co_await conn.read_request(&policy);
    head_read = req.has_value();
    if (!head_read) co_return;
    auto got = co_await conn.read_body_some(piece, sizeof piece);
    first.emplace(std::move(got));
    auto rest = co_await conn.read_body_some(piece, sizeof piece);
    second.emplace(std::move(rest));
  }, net::detached);

  while (!first && io.run_one_for(5s) > 0) {
  }
  ASSERT_TRUE(head_read);
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(first->has_value()) << first->err().message;
  EXPECT_EQ(**first, 8u) << "the piece is full: the whole payload";
  test::net::write(peer, test::net::buffer(std::string("0\r\n\r\n")));  // only now, the last line
  while (!second && io.run_one_for(5s) > 0) {
  }
  ASSERT_TRUE(second.has_value());
  ASSERT_TRUE(second->has_value()) << "the body had ended: " << second->err().message;
  EXPECT_EQ(**second, 0u);
  EXPECT_EQ(conn.body_bytes_read(), 8u);
}
