// handover_mesh: hands a client's connection from one worker process of a pod to another (docs/
// processes.md): the descriptor itself (SCM_RIGHTS) and the bytes already read from it, so the
// receiver serves the connection as if it had accepted it. One Unix SOCK_SEQPACKET socket pair per
// worker row, made by the supervisor before the first fork so that every worker, whenever it
// starts, inherits every row's sending end and its own row's inbox. A message is one datagram:
// never split, never merged with another, and a descriptor in flight keeps the connection open
// until the receiver takes it (or the supervisor discards the inbox of a row whose worker died).
// Thread-safe: send() and receive() are single system calls.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/unique_fd.hpp"

namespace sluice::runtime {

class handover_mesh {
 public:
  // A message's bytes at most (the request of a GET or a cancel, and any pipelined bytes).
  static constexpr std::size_t max_bytes = 64 * 1024;

  struct message {
    int fd = -1;  // the connection, now this process's to serve or close
    std::string bytes;
  };

  // `rows` socket pairs; throws std::system_error when they cannot be made.
  explicit handover_mesh(std::size_t rows);
  ~handover_mesh();
  handover_mesh(const handover_mesh&) = delete;
  handover_mesh& operator=(const handover_mesh&) = delete;

  // Sends a duplicate of `fd` and `bytes` to row's inbox, without blocking. False when the inbox is
  // full, `bytes` is larger than max_bytes, or the system refused (the caller keeps its connection).
  bool send(std::size_t row, int fd, std::string_view bytes) const noexcept;
  // Row's inbox: readable while a message waits.
  int inbox(std::size_t row) const noexcept { return pairs_[row].in.get(); }
  // One waiting message from an inbox, without blocking; nullopt when none (or a malformed one,
  // whose descriptor is closed).
  static std::optional<message> receive(int inbox);
  // Closes every connection waiting in row's inbox (its worker died: no one will serve them).
  // Returns how many.
  std::size_t discard(std::size_t row) const noexcept;
  std::size_t rows() const noexcept { return pairs_.size(); }

 private:
  struct pair {
    unique_fd in;   // read by the row's worker
    unique_fd out;  // written by every other worker
  };
  std::vector<pair> pairs_;
};

}  // namespace sluice::runtime
