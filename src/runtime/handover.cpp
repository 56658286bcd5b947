#include "runtime/handover.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

namespace sluice::runtime {

handover_mesh::handover_mesh(std::size_t rows) : pairs_(rows) {
  for (auto& p : pairs_) {
    int sv[2];
    // (A throw destroys pairs_, a member: the pairs made so far are closed with it.)
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
      throw std::system_error(errno, std::generic_category(), "socketpair for the pod's connection handover");
    p.in.reset(sv[0]);
    p.out.reset(sv[1]);
    // Large enough for a few max-size messages at once; the kernel may grant less.
    int size = static_cast<int>(4 * max_bytes);
    ::setsockopt(p.out.get(), SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
    ::setsockopt(p.in.get(), SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
  }
}

handover_mesh::~handover_mesh() = default;

bool handover_mesh::send(std::size_t row, int fd, std::string_view bytes) const noexcept {
  if (row >= pairs_.size() || bytes.size() > max_bytes || fd < 0) return false;
  char empty = 0;
  iovec iov{};
  // A datagram of zero bytes carries no ancillary data reliably: an empty message sends one byte.
  iov.iov_base = bytes.empty() ? &empty : const_cast<char*>(bytes.data());
  iov.iov_len = bytes.empty() ? 1 : bytes.size();
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  ssize_t n;
  do {
    n = ::sendmsg(pairs_[row].out.get(), &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(iov.iov_len);
}

std::optional<handover_mesh::message> handover_mesh::receive(int inbox) {
  std::string buf(max_bytes, '\0');
  iovec iov{buf.data(), buf.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  for (;;) {
    ssize_t n;
    do {
      n = ::recvmsg(inbox, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) return std::nullopt;
    int fd = -1;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)))
        std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
    const bool truncated = (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0;
    if (fd < 0 || truncated) {  // not one of ours: drop it and look at the next
      unique_fd dropped(fd);
      msg.msg_controllen = sizeof control;
      continue;
    }
    // The one byte of an empty message.
    buf.resize(n == 1 && buf[0] == '\0' ? 0 : static_cast<std::size_t>(n));
    return message{fd, std::move(buf)};
  }
}

std::size_t handover_mesh::discard(std::size_t row) const noexcept {
  if (row >= pairs_.size()) return 0;
  std::size_t n = 0;
  try {
    while (auto m = receive(pairs_[row].in.get())) {
      unique_fd dropped(m->fd);
      ++n;
    }
  } catch (...) {  // (receive's buffer could not be allocated: what is left waits for the next worker)
  }
  return n;
}

}  // namespace sluice::runtime
