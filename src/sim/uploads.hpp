// The Uploads API's open uploads (POST /v1/uploads, .../parts, .../complete, .../cancel): each
// upload's declared size and its parts' sizes and digests, never their bytes. Bounded (max_open
// uploads, max_parts parts each); completed and cancelled uploads leave it. Shared by every worker
// thread: each call takes the registry's mutex.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace sluice::sim {

struct upload_part_record {
  std::string id;  // part_<24 hex>
  std::uint64_t bytes = 0, digest = 0;
  std::int64_t created_at = 0;
};

struct upload_record {
  std::string id;  // upload_<24 hex>
  std::string filename, purpose, mime_type;
  std::uint64_t bytes = 0;  // as declared at creation
  std::int64_t created_at = 0;
  std::vector<upload_part_record> parts;
};

// A completed upload: its parts' total, and a digest folding theirs in the order the client named.
struct completed_upload {
  upload_record upload;
  std::uint64_t bytes = 0, digest = 0;
};

class upload_registry {
 public:
  static constexpr std::size_t max_open = 256;
  static constexpr std::size_t max_parts = 1000;

  // bad_request when max_open uploads are open.
  result<upload_record> create(std::string filename, std::string purpose, std::string mime_type, std::uint64_t bytes,
                               std::int64_t now);
  // not_found for an unknown upload, bad_request past max_parts.
  result<upload_part_record> add_part(std::string_view upload_id, std::uint64_t bytes, std::uint64_t digest,
                                      std::int64_t now);
  // The upload leaves the registry when every named part is its own and their sizes add up to the
  // declared size (bad_request naming part_ids otherwise, and it stays open).
  result<completed_upload> complete(std::string_view upload_id, const std::vector<std::string>& part_ids);
  result<upload_record> cancel(std::string_view upload_id);
  std::size_t open() const;

 private:
  mutable std::mutex mutex_;
  std::uint64_t counter_ = 0;
  std::map<std::string, upload_record, std::less<>> open_;
};

}  // namespace sluice::sim
