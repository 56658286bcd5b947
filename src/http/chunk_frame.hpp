// chunk_frame: one piece of a chunked body as a buffer sequence of at most three plain buffers
// (size line, data, CRLF, with the last chunk's "0\r\n\r\n" after it when the body ends there).
// The bytes are the ones Beast's make_chunk / make_chunk_last write; the sequence is an array, so
// that sizing it and handing it to sendmsg walk three buffers, not Beast's buffers_cat_view of five
// with its variant iterator (about 450 instructions per streamed event, docs/benchmarks.md).
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

#include <boost/asio/buffer.hpp>

namespace sluice::http {

class chunk_frame {
 public:
  enum class ending : unsigned char { more, last };  // last: the body's final chunk follows

  // A chunk of `data` (not empty: an empty chunk would end the body), and the last chunk after it
  // when `e` is last.
  chunk_frame(std::string_view data, ending e) noexcept : data_(data), last_(e == ending::last) {
    std::size_t n = data.size();
    std::size_t at = sizeof size_line_ - 2;
    size_line_[at] = '\r';
    size_line_[at + 1] = '\n';
    do {
      size_line_[--at] = "0123456789abcdef"[n & 0xF];
      n >>= 4;
    } while (n != 0);
    size_from_ = static_cast<unsigned char>(at);
    point();
  }
  // The last chunk alone ("0\r\n\r\n").
  chunk_frame() noexcept : size_from_(sizeof size_line_), last_(true) { point(); }

  // Copies point into their own size line (a coroutine frame holds a copy of the caller's).
  chunk_frame(const chunk_frame& o) noexcept : data_(o.data_), size_from_(o.size_from_), last_(o.last_) {
    copy_size_line(o);
    point();
  }
  chunk_frame& operator=(const chunk_frame& o) noexcept {
    data_ = o.data_;
    size_from_ = o.size_from_;
    last_ = o.last_;
    copy_size_line(o);
    point();
    return *this;
  }
  ~chunk_frame() = default;

  using value_type = boost::asio::const_buffer;
  using const_iterator = const boost::asio::const_buffer*;
  const_iterator begin() const noexcept { return buffers_.data(); }
  const_iterator end() const noexcept { return buffers_.data() + count_; }

 private:
  static constexpr std::string_view crlf = "\r\n";
  static constexpr std::string_view crlf_and_last = "\r\n0\r\n\r\n";
  static constexpr std::string_view last_alone = "0\r\n\r\n";

  void copy_size_line(const chunk_frame& o) noexcept {
    for (std::size_t i = o.size_from_; i < sizeof size_line_; ++i) size_line_[i] = o.size_line_[i];
  }
  void point() noexcept {
    if (size_from_ == sizeof size_line_) {  // the last chunk alone
      buffers_[0] = boost::asio::buffer(last_alone.data(), last_alone.size());
      count_ = 1;
      return;
    }
    buffers_[0] = boost::asio::const_buffer(size_line_ + size_from_, sizeof size_line_ - size_from_);
    buffers_[1] = boost::asio::const_buffer(data_.data(), data_.size());
    const std::string_view tail = last_ ? crlf_and_last : crlf;
    buffers_[2] = boost::asio::const_buffer(tail.data(), tail.size());
    count_ = 3;
  }

  std::string_view data_;
  char size_line_[18];  // up to 16 hex digits and CRLF, written from the end
  unsigned char size_from_;
  bool last_;
  unsigned char count_ = 0;
  std::array<boost::asio::const_buffer, 3> buffers_;
};

}  // namespace sluice::http
