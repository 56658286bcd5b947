// The simulator's process-wide file store (POST /v1/files and completed Uploads): a file's record
// always, its bytes only while they fit in a fixed budget (option file-store); a file that does not
// fit is kept as its size and FNV-1a digest. Shared by every worker thread: each call takes the
// store's mutex. Kept bytes are shared with downloads in flight, which keep them alive after a
// delete (the budget is given back at the delete).
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sluice::sim {

// A file's bytes in pieces (no piece is reallocated as the file grows).
using file_bytes = std::vector<std::string>;

struct file_record {
  std::string id;  // file-<24 hex>
  std::string filename, purpose;
  std::uint64_t bytes = 0;
  std::uint64_t digest = 0;  // FNV-1a of the bytes
  std::int64_t created_at = 0;
  std::shared_ptr<const file_bytes> content;  // null: only the digest was kept
};

class file_store {
 public:
  // The records kept at most; past it the oldest goes (and its bytes).
  static constexpr std::size_t max_files = 10'000;

  explicit file_store(std::uint64_t budget_bytes) noexcept : budget_(budget_bytes) {}

  // Takes n bytes of the budget if that much is left.
  bool reserve(std::uint64_t n);
  void release(std::uint64_t n);

  // Records a file; `content` (null for digest only) holds `reserved` bytes of the budget, which the
  // record now owns. Its id derives from a counter and the digest.
  file_record add(std::string filename, std::string purpose, std::uint64_t size, std::uint64_t digest,
                  std::shared_ptr<const file_bytes> content, std::uint64_t reserved, std::int64_t now);
  std::optional<file_record> find(std::string_view id) const;
  // Newest first: at most `limit`, only `purpose` when it is not empty.
  std::vector<file_record> list(std::size_t limit, std::string_view purpose) const;
  // False when there is no such file.
  bool remove(std::string_view id);

  std::uint64_t kept_bytes() const;  // of the budget, in use
  std::size_t size() const;          // records

 private:
  struct entry {
    file_record record;
    std::uint64_t reserved = 0;
  };
  void erase_locked(std::list<entry>::iterator it);

  mutable std::mutex mutex_;
  std::uint64_t budget_;
  std::uint64_t used_ = 0;
  std::uint64_t counter_ = 0;
  std::list<entry> order_;  // oldest first
  std::unordered_map<std::string, std::list<entry>::iterator> by_id_;
};

// One upload's bytes on their way into the store, kept while the budget allows: each piece takes
// its share of the budget first; the first piece that does not fit drops what was kept and the
// file goes on as digest only. Whatever was not committed goes back to the budget on destruction
// (a client that left mid-upload stores nothing). One per upload, on one thread.
class file_keeper {
 public:
  static constexpr std::size_t piece_bytes = 64 * 1024;

  explicit file_keeper(file_store& store) noexcept : store_(store) {}
  ~file_keeper();
  file_keeper(const file_keeper&) = delete;
  file_keeper& operator=(const file_keeper&) = delete;

  void append(std::string_view bytes);
  bool keeping() const noexcept { return keeping_; }
  // Records the file, with its bytes if they were all kept.
  file_record commit(std::string filename, std::string purpose, std::uint64_t size, std::uint64_t digest,
                     std::int64_t now);

 private:
  void drop();

  file_store& store_;
  std::shared_ptr<file_bytes> bytes_ = std::make_shared<file_bytes>();
  std::uint64_t reserved_ = 0;
  bool keeping_ = true;
};

}  // namespace sluice::sim
