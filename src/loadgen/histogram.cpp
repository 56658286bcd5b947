#include "loadgen/histogram.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace sluice::loadgen {

std::size_t histogram::index_of(std::uint64_t value) noexcept {
  if (value < 2 * sub_count) return static_cast<std::size_t>(value);
  const unsigned top = static_cast<unsigned>(std::bit_width(value)) - 1;  // >= sub_bits + 1
  const unsigned shift = top - sub_bits;                                  // >= 1
  const std::uint64_t mantissa = value >> shift;                          // in [sub_count, 2*sub_count)
  return static_cast<std::size_t>(2 * sub_count + (shift - 1) * sub_count + (mantissa - sub_count));
}

std::uint64_t histogram::lower_bound(std::size_t index) noexcept {
  if (index < 2 * sub_count) return index;
  const std::size_t rel = index - 2 * sub_count;
  const unsigned shift = static_cast<unsigned>(rel / sub_count) + 1;
  const std::uint64_t mantissa = sub_count + rel % sub_count;
  return mantissa << shift;
}

std::uint64_t histogram::width(std::size_t index) noexcept {
  if (index < 2 * sub_count) return 1;
  return std::uint64_t{1} << (static_cast<unsigned>((index - 2 * sub_count) / sub_count) + 1);
}

void histogram::record(std::uint64_t value) noexcept {
  ++buckets_[index_of(value)];
  ++count_;
  min_ = std::min(min_, value);
  max_ = std::max(max_, value);
}

void histogram::merge(const histogram& other) noexcept {
  for (std::size_t i = 0; i < bucket_count; ++i) buckets_[i] += other.buckets_[i];
  count_ += other.count_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

std::uint64_t histogram::value_at(double p) const noexcept {
  if (count_ == 0) return 0;
  if (p >= 100) return max_;
  // Rank of the sample we want, 1-based: ceil(p% of count), at least the first sample.
  auto rank = static_cast<std::uint64_t>(std::ceil(p / 100.0 * static_cast<double>(count_)));
  rank = std::clamp<std::uint64_t>(rank, 1, count_);
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < bucket_count; ++i) {
    seen += buckets_[i];
    if (seen >= rank) {
      // Midpoint halves the worst-case error; wider-than-one buckets only exist above 255 ns.
      const std::uint64_t w = width(i);
      const std::uint64_t mid = lower_bound(i) + (w > 1 ? w / 2 : 0);
      return std::clamp(mid, min_, max_);
    }
  }
  return max_;
}

}  // namespace sluice::loadgen
