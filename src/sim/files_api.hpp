// The JSON of the Files and Uploads APIs in the simulator: file objects and lists, and the Uploads
// requests (create, complete, cancel) applied to the registry and the store. Pure but for the
// store and registry they are handed (both thread-safe); `now` is the caller's clock.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "sim/file_store.hpp"
#include "sim/uploads.hpp"

namespace sluice::sim {

// The purposes a file may be uploaded for, as OpenAI lists them.
bool valid_file_purpose(std::string_view purpose) noexcept;

// {"id","object":"file","bytes","created_at","filename","purpose","status":"processed",...}
std::string file_object_json(const file_record& f);
// {"object":"list","data":[...],"first_id","last_id","has_more":false}
std::string file_list_json(const std::vector<file_record>& files);
// {"id","object":"file","deleted":true}
std::string file_deleted_json(std::string_view id);
// No such File object: <id> (not_found).
error no_such_file(std::string_view id);

// A query parameter of a request target, percent-decoded ('+' is a space); nothing when absent.
std::optional<std::string> decoded_query_param(std::string_view target, std::string_view name);
// GET /v1/files' `limit` (1..10000, default 10000) and `purpose`, or a bad_request naming limit.
struct file_list_query {
  std::size_t limit = 10'000;
  std::string purpose;
};
result<file_list_query> parse_file_list_query(std::string_view target);

// POST /v1/uploads: {bytes, filename, mime_type, purpose} -> the upload object (status pending).
result<std::string> create_upload(upload_registry& uploads, std::string_view body, std::int64_t now);
// POST /v1/uploads/{id}/complete: {part_ids} -> the upload object (status completed) with its file
// object; the file goes into the store as its digest only.
result<std::string> complete_upload(upload_registry& uploads, file_store& files, std::string_view upload_id,
                                    std::string_view body, std::int64_t now);
// POST /v1/uploads/{id}/cancel -> the upload object (status cancelled).
result<std::string> cancel_upload(upload_registry& uploads, std::string_view upload_id);
// The upload.part object of POST /v1/uploads/{id}/parts.
std::string upload_part_json(const upload_part_record& part, std::string_view upload_id);

}  // namespace sluice::sim
