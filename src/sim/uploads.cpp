#include "sim/uploads.hpp"

#include "sim/bytes.hpp"

namespace sluice::sim {
namespace {

error no_such_upload(std::string_view id) {
  return error::make(errc::not_found, "No such Upload object: " + std::string(id));
}

}  // namespace

result<upload_record> upload_registry::create(std::string filename, std::string purpose, std::string mime_type,
                                              std::uint64_t bytes, std::int64_t now) {
  std::lock_guard lock(mutex_);
  if (open_.size() >= max_open)
    return error::make(errc::bad_request, "Too many pending uploads: at most " + std::to_string(max_open) +
                                              " may be open at once; complete or cancel one first.");
  ++counter_;
  upload_record u{"upload_" + hex_digits(mix64(counter_ ^ 0x75706c6f6164ull), 16) + hex_digits(mix64(counter_), 8),
                  std::move(filename), std::move(purpose), std::move(mime_type), bytes, now, {}};
  open_.emplace(u.id, u);
  return u;
}

result<upload_part_record> upload_registry::add_part(std::string_view upload_id, std::uint64_t bytes,
                                                     std::uint64_t digest, std::int64_t now) {
  std::lock_guard lock(mutex_);
  const auto it = open_.find(upload_id);
  if (it == open_.end()) return no_such_upload(upload_id);
  auto& parts = it->second.parts;
  if (parts.size() >= max_parts)
    return error::make(errc::bad_request, "An upload may have at most " + std::to_string(max_parts) + " parts.");
  ++counter_;
  parts.push_back({"part_" + hex_digits(mix64(digest ^ mix64(counter_)), 16) + hex_digits(mix64(counter_), 8), bytes,
                   digest, now});
  return parts.back();
}

result<completed_upload> upload_registry::complete(std::string_view upload_id, const std::vector<std::string>& part_ids) {
  std::lock_guard lock(mutex_);
  const auto it = open_.find(upload_id);
  if (it == open_.end()) return no_such_upload(upload_id);
  completed_upload done{it->second, 0, fnv1a_hasher::offset_basis};
  for (const auto& id : part_ids) {
    const upload_part_record* found = nullptr;
    for (const auto& p : it->second.parts)
      if (p.id == id) found = &p;
    if (!found) return error::make(errc::bad_request, "No such part in this upload: " + id, "part_ids");
    done.bytes += found->bytes;
    done.digest = mix64(done.digest ^ found->digest);
  }
  if (done.bytes != it->second.bytes)
    return error::make(errc::bad_request,
                       "The parts add up to " + std::to_string(done.bytes) + " bytes, but the upload was created for " +
                           std::to_string(it->second.bytes) + " bytes.",
                       "part_ids");
  open_.erase(it);
  return done;
}

result<upload_record> upload_registry::cancel(std::string_view upload_id) {
  std::lock_guard lock(mutex_);
  const auto it = open_.find(upload_id);
  if (it == open_.end()) return no_such_upload(upload_id);
  upload_record u = std::move(it->second);
  open_.erase(it);
  return u;
}

std::size_t upload_registry::open() const {
  std::lock_guard lock(mutex_);
  return open_.size();
}

}  // namespace sluice::sim
