// Log-bucket latency histogram (HDR-style): fixed size, no allocation per sample, mergeable.
// One instance per worker thread, merged on the main thread after the workers have joined;
// not thread-safe. Values are nanoseconds; percentiles are within 0.4% of the exact value.
#pragma once

#include <array>
#include <cstdint>

namespace sluice::loadgen {

class histogram {
 public:
  // Values below 2^(sub_bits+1) get a bucket each; above, every power of two is split into
  // 2^sub_bits equal buckets, so a bucket is never wider than 1/128 of its lower bound.
  static constexpr unsigned sub_bits = 7;
  static constexpr std::uint64_t sub_count = std::uint64_t{1} << sub_bits;
  static constexpr std::size_t bucket_count = 2 * sub_count + (63 - sub_bits) * sub_count;

  void record(std::uint64_t value) noexcept;
  void merge(const histogram& other) noexcept;

  std::uint64_t count() const noexcept { return count_; }
  std::uint64_t min() const noexcept { return count_ ? min_ : 0; }
  std::uint64_t max() const noexcept { return max_; }

  // The value at percentile p (0 < p <= 100): the smallest bucket value with at least p% of the
  // samples at or below it, reported as the bucket's midpoint clamped to [min, max]. p = 100 gives
  // the exact maximum. 0 when empty.
  std::uint64_t value_at(double p) const noexcept;

  // Bucket arithmetic, public for tests.
  static std::size_t index_of(std::uint64_t value) noexcept;
  static std::uint64_t lower_bound(std::size_t index) noexcept;
  static std::uint64_t width(std::size_t index) noexcept;

 private:
  std::array<std::uint64_t, bucket_count> buckets_{};
  std::uint64_t count_ = 0;
  std::uint64_t min_ = ~std::uint64_t{0};
  std::uint64_t max_ = 0;
};

}  // namespace sluice::loadgen
