// The one bounded per-stream buffer of the relay: holds upstream bytes until they form complete SSE
// events and have been written to the client. Starts small, grows on demand up to a hard bound, so
// ten thousand idle streams cost little and one huge event cannot cost more than the bound.
// Owned by one relay on one thread.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <string_view>

namespace sluice::proxy {

class stream_buffer {
 public:
  stream_buffer(std::size_t initial, std::size_t max) : max_(max < 16 ? 16 : max), initial_(initial) {}

  // Free space to read into; grows (doubling, up to max) when less than a quarter is free.
  // Returns an empty span only when the buffer is full at its bound.
  char* free_data() { ensure_room(); return data_.get() + size_; }
  std::size_t free_size() { ensure_room(); return cap_ - size_; }
  void commit(std::size_t n) noexcept { size_ += n; }

  const char* data() const noexcept { return data_.get(); }
  char* mutable_data() noexcept { return data_.get(); }  // bytes already read, to rewrite in place
  std::size_t size() const noexcept { return size_; }
  std::size_t capacity() const noexcept { return cap_; }
  std::size_t max() const noexcept { return max_; }
  std::string_view view(std::size_t from, std::size_t n) const noexcept { return {data_.get() + from, n}; }

  // A read filled all the free space: the stream is fast. Doubles the capacity (up to `limit`, at
  // most the bound) so the next read and write move more bytes per system call; slow streams,
  // whose reads never fill the buffer, keep their small one.
  void grow_for_throughput(std::size_t limit) {
    if (limit > max_) limit = max_;
    if (!data_ || cap_ >= limit) return;
    std::size_t ncap = cap_ * 2 < limit ? cap_ * 2 : limit;
    auto bigger = std::make_unique_for_overwrite<char[]>(ncap);
    std::memcpy(bigger.get(), data_.get(), size_);
    data_ = std::move(bigger);
    cap_ = ncap;
  }

  // Drops the first n bytes (they have been written), keeping the tail at the front.
  void consume(std::size_t n) noexcept {
    if (n >= size_) {
      size_ = 0;
    } else {
      std::memmove(data_.get(), data_.get() + n, size_ - n);
      size_ -= n;
    }
  }

 private:
  void ensure_room() {
    if (!data_) {
      cap_ = initial_ < max_ ? (initial_ == 0 ? 512 : initial_) : max_;
      data_ = std::make_unique_for_overwrite<char[]>(cap_);
    }
    if (cap_ - size_ < cap_ / 4 && cap_ < max_) {
      std::size_t ncap = cap_ * 2 < max_ ? cap_ * 2 : max_;
      auto bigger = std::make_unique_for_overwrite<char[]>(ncap);
      std::memcpy(bigger.get(), data_.get(), size_);
      data_ = std::move(bigger);
      cap_ = ncap;
    }
  }

  std::unique_ptr<char[]> data_;
  std::size_t size_ = 0;
  std::size_t cap_ = 0;
  std::size_t max_;
  std::size_t initial_;
};

}  // namespace sluice::proxy
