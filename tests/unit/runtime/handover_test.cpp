// handover_mesh: a descriptor and its bytes cross from one end to the other as one message; a
// message too large, an inbox nobody reads until full, and the discard of a dead row's inbox.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "runtime/handover.hpp"

using namespace sluice;

namespace {

// A connected pair standing in for a client's connection: [0] is handed over, [1] is the client.
struct client_pair {
  int fd[2] = {-1, -1};
  client_pair() { EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fd), 0); }
  ~client_pair() {
    for (int f : fd)
      if (f >= 0) ::close(f);
  }
};

TEST(HandoverMesh, TheDescriptorAndItsBytesArriveAsOneMessage) {
  runtime::handover_mesh mesh(4);
  client_pair c;
  const std::string bytes = "GET /v1/responses/resp_1 HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_TRUE(mesh.send(2, c.fd[0], bytes));
  EXPECT_FALSE(runtime::handover_mesh::receive(mesh.inbox(1))) << "another row's inbox is empty";
  auto m = runtime::handover_mesh::receive(mesh.inbox(2));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->bytes, bytes);
  // The received descriptor is the same connection: what is written there reaches the client.
  ::close(c.fd[0]);
  c.fd[0] = -1;
  ASSERT_EQ(::write(m->fd, "hi", 2), 2);
  char got[2] = {};
  ASSERT_EQ(::read(c.fd[1], got, 2), 2);
  EXPECT_EQ(std::string(got, 2), "hi");
  ::close(m->fd);
  EXPECT_FALSE(runtime::handover_mesh::receive(mesh.inbox(2)));
  // An empty message is a message too.
  client_pair d;
  ASSERT_TRUE(mesh.send(0, d.fd[0], ""));
  auto e = runtime::handover_mesh::receive(mesh.inbox(0));
  ASSERT_TRUE(e);
  EXPECT_TRUE(e->bytes.empty());
  ::close(e->fd);
}

TEST(HandoverMesh, RefusesWhatItCannotCarryAndDiscardsWhatNobodyTook) {
  runtime::handover_mesh mesh(2);
  client_pair c;
  EXPECT_FALSE(mesh.send(1, c.fd[0], std::string(runtime::handover_mesh::max_bytes + 1, 'x')));
  EXPECT_FALSE(mesh.send(7, c.fd[0], "x")) << "no such row";
  std::size_t sent = 0;
  while (sent < 10000 && mesh.send(1, c.fd[0], std::string(4096, 'x'))) ++sent;
  EXPECT_LT(sent, 10000u) << "a full inbox refuses at once (never blocks)";
  EXPECT_GT(sent, 0u);
  EXPECT_EQ(mesh.discard(1), sent);
  EXPECT_FALSE(runtime::handover_mesh::receive(mesh.inbox(1)));
  // Every duplicate was closed: the client sees its peer close once the original goes too.
  ::close(c.fd[0]);
  c.fd[0] = -1;
  char b;
  EXPECT_EQ(::read(c.fd[1], &b, 1), 0);
}

}  // namespace
