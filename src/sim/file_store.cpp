#include "sim/file_store.hpp"

#include <algorithm>
#include <iterator>

#include "sim/bytes.hpp"

namespace sluice::sim {

bool file_store::reserve(std::uint64_t n) {
  std::lock_guard lock(mutex_);
  if (n > budget_ - used_) return false;
  used_ += n;
  return true;
}

void file_store::release(std::uint64_t n) {
  std::lock_guard lock(mutex_);
  used_ -= std::min(n, used_);
}

file_record file_store::add(std::string filename, std::string purpose, std::uint64_t size, std::uint64_t digest,
                            std::shared_ptr<const file_bytes> content, std::uint64_t reserved, std::int64_t now) {
  std::lock_guard lock(mutex_);
  if (order_.size() >= max_files) erase_locked(order_.begin());
  std::string id;
  do {  // a repeat is as good as impossible, but an id must name one file
    ++counter_;
    id = "file-" + hex_digits(mix64(digest ^ mix64(counter_)), 16) + hex_digits(mix64(counter_), 8);
  } while (by_id_.contains(id));
  order_.push_back({file_record{id, std::move(filename), std::move(purpose), size, digest, now, std::move(content)},
                    reserved});
  by_id_.emplace(id, std::prev(order_.end()));
  return order_.back().record;
}

std::optional<file_record> file_store::find(std::string_view id) const {
  std::lock_guard lock(mutex_);
  const auto it = by_id_.find(std::string(id));
  if (it == by_id_.end()) return std::nullopt;
  return it->second->record;
}

std::vector<file_record> file_store::list(std::size_t limit, std::string_view purpose) const {
  std::lock_guard lock(mutex_);
  std::vector<file_record> out;
  for (auto it = order_.rbegin(); it != order_.rend() && out.size() < limit; ++it)
    if (purpose.empty() || it->record.purpose == purpose) out.push_back(it->record);
  return out;
}

bool file_store::remove(std::string_view id) {
  std::lock_guard lock(mutex_);
  const auto it = by_id_.find(std::string(id));
  if (it == by_id_.end()) return false;
  erase_locked(it->second);
  return true;
}

void file_store::erase_locked(std::list<entry>::iterator it) {
  used_ -= std::min(it->reserved, used_);
  by_id_.erase(it->record.id);
  order_.erase(it);
}

std::uint64_t file_store::kept_bytes() const {
  std::lock_guard lock(mutex_);
  return used_;
}

std::size_t file_store::size() const {
  std::lock_guard lock(mutex_);
  return order_.size();
}

file_keeper::~file_keeper() { drop(); }

void file_keeper::drop() {
  store_.release(reserved_);
  reserved_ = 0;
  bytes_.reset();
  keeping_ = false;
}

void file_keeper::append(std::string_view bytes) {
  if (!keeping_ || bytes.empty()) return;
  if (!store_.reserve(bytes.size())) {
    drop();
    return;
  }
  reserved_ += bytes.size();
  while (!bytes.empty()) {
    if (bytes_->empty() || bytes_->back().size() == piece_bytes) {
      bytes_->emplace_back();
      bytes_->back().reserve(piece_bytes);
    }
    auto& last = bytes_->back();
    const std::size_t n = std::min(bytes.size(), piece_bytes - last.size());
    last.append(bytes.substr(0, n));
    bytes.remove_prefix(n);
  }
}

file_record file_keeper::commit(std::string filename, std::string purpose, std::uint64_t size, std::uint64_t digest,
                                std::int64_t now) {
  std::shared_ptr<const file_bytes> content;
  std::uint64_t reserved = 0;
  if (keeping_) {
    if (!bytes_->empty()) bytes_->back().shrink_to_fit();
    content = std::move(bytes_);
    reserved = reserved_;
  }
  reserved_ = 0;  // owned by the record now (or nothing was kept)
  keeping_ = false;
  return store_.add(std::move(filename), std::move(purpose), size, digest, std::move(content), reserved, now);
}

}  // namespace sluice::sim
