#include "jobs/response_index.hpp"

#include <vector>

namespace sluice::jobs {

class pod_response_index::guard {
 public:
  explicit guard(pod_response_index& i) : i_(i) {
    // A process that died inside may have left a backward shift half done: entries could sit
    // where a probe does not find them. Putting every entry back fixes that.
    if (i_.mu_.lock()) i_.rebuild_locked([](const entry&) { return true; });
  }
  ~guard() { i_.mu_.unlock(); }
  guard(const guard&) = delete;
  guard& operator=(const guard&) = delete;

 private:
  pod_response_index& i_;
};

std::uint64_t pod_response_index::hash(std::string_view id) noexcept {
  // FNV-1a, then a final mix so that ids differing only at the end spread over the table.
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : id) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h == 0 ? 1 : h;
}

void pod_response_index::insert_locked(std::uint64_t key, std::uint32_t row) noexcept {
  std::size_t i = key & (slots - 1);
  while (table_[i].key != 0 && table_[i].key != key) i = (i + 1) & (slots - 1);
  if (table_[i].key == 0) size_.fetch_add(1, std::memory_order_relaxed);
  table_[i] = entry{key, row};
}

void pod_response_index::erase_at_locked(std::size_t i) noexcept {
  // Backward-shift deletion: the entries after the hole that probed past it move up into it.
  table_[i] = entry{};
  size_.fetch_sub(1, std::memory_order_relaxed);
  std::size_t hole = i;
  for (std::size_t j = (i + 1) & (slots - 1); table_[j].key != 0; j = (j + 1) & (slots - 1)) {
    const std::size_t home = table_[j].key & (slots - 1);
    // Does j's probe sequence (home .. j) pass through the hole? Then it may move there.
    const bool passes = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
    if (passes) {
      table_[hole] = table_[j];
      table_[j] = entry{};
      hole = j;
    }
  }
}

template <class Keep>
void pod_response_index::rebuild_locked(Keep&& keep) noexcept {
  std::vector<entry> kept;
  try {
    kept.reserve(size_.load(std::memory_order_relaxed));
    for (const auto& e : table_)
      if (e.key != 0 && keep(e)) kept.push_back(e);
  } catch (...) {  // no memory to rebuild with: start empty (ids then miss: 404, never a wrong answer)
    kept.clear();
  }
  table_.fill(entry{});
  size_.store(0, std::memory_order_relaxed);
  for (const auto& e : kept) insert_locked(e.key, e.row);
}

bool pod_response_index::add(std::string_view id, std::uint32_t row) noexcept {
  const std::uint64_t key = hash(id);
  guard g(*this);
  if (size_.load(std::memory_order_relaxed) >= capacity) return false;
  insert_locked(key, row);
  return true;
}

void pod_response_index::remove(std::string_view id, std::uint32_t row) noexcept {
  const std::uint64_t key = hash(id);
  guard g(*this);
  for (std::size_t i = key & (slots - 1); table_[i].key != 0; i = (i + 1) & (slots - 1)) {
    if (table_[i].key != key) continue;
    if (table_[i].row == row) erase_at_locked(i);
    return;
  }
}

std::optional<std::uint32_t> pod_response_index::holder(std::string_view id) noexcept {
  const std::uint64_t key = hash(id);
  guard g(*this);
  for (std::size_t i = key & (slots - 1); table_[i].key != 0; i = (i + 1) & (slots - 1))
    if (table_[i].key == key) return table_[i].row;
  return std::nullopt;
}

void pod_response_index::drop_row(std::uint32_t row) noexcept {
  guard g(*this);
  rebuild_locked([row](const entry& e) { return e.row != row; });
}

}  // namespace sluice::jobs
