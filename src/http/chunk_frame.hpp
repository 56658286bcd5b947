// A piece of a chunked body as it is written: its chunk-size line goes into the connection's held
// bytes (the `held_head_` that a held head also waits in, sent in the same sendmsg before the
// piece), and the piece itself is a buffer sequence of two plain buffers: the data, then CRLF (or
// CRLF and the last chunk, "0\r\n\r\n", when the body ends there). The bytes are the ones Beast's
// make_chunk / make_chunk_last write; two plain buffers instead of Beast's buffers_cat_view of five
// with its variant iterator and the `make_shared` of its size line (docs/benchmarks.md).
//
// The size line is not kept inside the sequence: Asio copies and moves a buffer sequence while a
// write is pending and keeps the buffers it took from an earlier copy, so a sequence must never
// point into itself (docs/benchmarks.md, "The event scan's skim and the chunk frame").
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

#include <boost/asio/buffer.hpp>

namespace sluice::http {

// Appends the chunk-size line of a chunk of `n` bytes ("<lowercase hex>\r\n") to `out`.
inline void append_chunk_size_line(std::string& out, std::size_t n) {
  char line[18];  // up to 16 hex digits and CRLF, written from the end
  std::size_t at = sizeof line - 2;
  line[at] = '\r';
  line[at + 1] = '\n';
  do {
    line[--at] = "0123456789abcdef"[n & 0xF];
    n >>= 4;
  } while (n != 0);
  out.append(line + at, sizeof line - at);
}

inline constexpr std::string_view last_chunk = "0\r\n\r\n";

class chunk_piece {
 public:
  enum class ending : unsigned char { more, last };  // last: the body's final chunk follows

  // `data` must not be empty (an empty chunk would end the body) and must outlive the write.
  chunk_piece(std::string_view data, ending e) noexcept : data_size_(data.size()) {
    static constexpr std::string_view crlf = "\r\n", crlf_and_last = "\r\n0\r\n\r\n";
    const std::string_view tail = e == ending::last ? crlf_and_last : crlf;
    buffers_ = {boost::asio::const_buffer(data.data(), data.size()), boost::asio::const_buffer(tail.data(), tail.size())};
  }

  // The chunk's size, for its size line.
  std::size_t data_size() const noexcept { return data_size_; }

  using value_type = boost::asio::const_buffer;
  using const_iterator = const boost::asio::const_buffer*;
  const_iterator begin() const noexcept { return buffers_.data(); }
  const_iterator end() const noexcept { return buffers_.data() + buffers_.size(); }

 private:
  std::array<boost::asio::const_buffer, 2> buffers_;
  std::size_t data_size_;
};

}  // namespace sluice::http
