// Large response bodies of the simulator (speech audio, a kept file's content), sent piece by piece
// with back-pressure: the next piece is produced only once the socket took the last, so a body of
// any size costs one piece of memory. On the connection's worker thread only.
#pragma once

#include <boost/beast/http/empty_body.hpp>

#include <cstdint>
#include <string_view>

#include "sim/worker.hpp"

namespace sluice::sim {

inline constexpr std::size_t download_piece_bytes = 16 * 1024;

// Where a streamed body's bytes come from.
class body_source {
 public:
  // The bytes at `offset`, at most `max` (and at least one while any are left): a view into the
  // source's own memory, or into `scratch` (room for `max` bytes) after filling it.
  virtual std::string_view piece(std::uint64_t offset, std::size_t max, char* scratch) const = 0;

 protected:
  ~body_source() = default;
};

// Sends `head` (its Content-Length set here to `size`), then `size` bytes of `body` in pieces of
// download_piece_bytes, at most `rate` bytes a second (0: as fast as the client reads). A client
// that leaves, even during a pause, ends it at once (peer_gone). Body bytes sent count in
// download_bytes.
task<response_end> send_streamed(connection& c, http::response<http::empty_body>& head, const body_source& body,
                                 std::uint64_t size, std::uint64_t rate);

}  // namespace sluice::sim
