#include "sim/files_api.hpp"

#include <array>
#include <charconv>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

namespace sluice::sim {
namespace {

namespace json = boost::json;

constexpr std::array<std::string_view, 6> file_purposes{"assistants", "batch", "fine-tune", "vision", "user_data", "evals"};

json::object file_object(const file_record& f) {
  return {{"id", f.id},
          {"object", "file"},
          {"bytes", f.bytes},
          {"created_at", f.created_at},
          {"filename", f.filename},
          {"purpose", f.purpose},
          {"status", "processed"},
          {"expires_at", nullptr},
          {"status_details", nullptr}};
}

json::object upload_object(const upload_record& u, std::string_view status, json::value file) {
  return {{"id", u.id},
          {"object", "upload"},
          {"bytes", u.bytes},
          {"created_at", u.created_at},
          {"filename", u.filename},
          {"purpose", u.purpose},
          {"status", status},
          {"expires_at", u.created_at + 3600},
          {"file", std::move(file)}};
}

error missing_param(std::string_view name) {
  return error::make(errc::bad_request, "Missing required parameter: '" + std::string(name) + "'.", std::string(name));
}

result<json::object> json_object_of(std::string_view body) {
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec || !v.is_object()) return error::make(errc::bad_request, "The request body is not a JSON object.");
  return std::move(v.get_object());
}

result<std::string> string_member(const json::object& o, std::string_view name) {
  const auto* v = o.if_contains(name);
  if (!v || !v->is_string() || v->get_string().empty()) return missing_param(name);
  return std::string(v->get_string());
}

int hex_value(char c) noexcept {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

std::string percent_decoded(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size() && hex_value(s[i + 1]) >= 0 && hex_value(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

bool valid_file_purpose(std::string_view purpose) noexcept {
  for (auto p : file_purposes)
    if (p == purpose) return true;
  return false;
}

std::string file_object_json(const file_record& f) { return json::serialize(file_object(f)); }

std::string file_list_json(const std::vector<file_record>& files) {
  json::array data;
  for (const auto& f : files) data.push_back(file_object(f));
  json::value first = files.empty() ? json::value(nullptr) : json::value(files.front().id);
  json::value last = files.empty() ? json::value(nullptr) : json::value(files.back().id);
  return json::serialize(json::object{
      {"object", "list"}, {"data", std::move(data)}, {"first_id", first}, {"last_id", last}, {"has_more", false}});
}

std::string file_deleted_json(std::string_view id) {
  return json::serialize(json::object{{"id", id}, {"object", "file"}, {"deleted", true}});
}

error no_such_file(std::string_view id) {
  return error::make(errc::not_found, "No such File object: " + std::string(id), "id");
}

std::optional<std::string> decoded_query_param(std::string_view target, std::string_view name) {
  const auto q = target.find('?');
  if (q == std::string_view::npos) return std::nullopt;
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    const auto amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
    const auto eq = pair.find('=');
    if (percent_decoded(pair.substr(0, eq)) != name) continue;
    return eq == std::string_view::npos ? std::string() : percent_decoded(pair.substr(eq + 1));
  }
  return std::nullopt;
}

result<file_list_query> parse_file_list_query(std::string_view target) {
  file_list_query q;
  if (auto limit = decoded_query_param(target, "limit")) {
    std::size_t n = 0;
    const auto [p, ec] = std::from_chars(limit->data(), limit->data() + limit->size(), n);
    if (limit->empty() || ec != std::errc{} || p != limit->data() + limit->size() || n < 1 || n > 10'000)
      return error::make(errc::bad_request, "limit: an integer from 1 to 10000", "limit");
    q.limit = n;
  }
  if (auto purpose = decoded_query_param(target, "purpose")) q.purpose = std::move(*purpose);
  return q;
}

result<std::string> create_upload(upload_registry& uploads, std::string_view body, std::int64_t now) {
  auto o = json_object_of(body);
  if (!o) return std::move(o).err();
  const auto* bytes = o->if_contains("bytes");
  if (!bytes || !bytes->is_int64() || bytes->get_int64() < 0) return missing_param("bytes");
  auto filename = string_member(*o, "filename");
  if (!filename) return std::move(filename).err();
  auto mime = string_member(*o, "mime_type");
  if (!mime) return std::move(mime).err();
  auto purpose = string_member(*o, "purpose");
  if (!purpose) return std::move(purpose).err();
  if (!valid_file_purpose(*purpose))
    return error::make(errc::bad_request, "Invalid purpose: '" + *purpose + "'.", "purpose");
  auto u = uploads.create(std::move(*filename), std::move(*purpose), std::move(*mime),
                          static_cast<std::uint64_t>(bytes->get_int64()), now);
  if (!u) return std::move(u).err();
  return json::serialize(upload_object(*u, "pending", nullptr));
}

result<std::string> complete_upload(upload_registry& uploads, file_store& files, std::string_view upload_id,
                                    std::string_view body, std::int64_t now) {
  auto o = json_object_of(body);
  if (!o) return std::move(o).err();
  const auto* ids = o->if_contains("part_ids");
  if (!ids || !ids->is_array()) return missing_param("part_ids");
  std::vector<std::string> part_ids;
  for (const auto& id : ids->get_array()) {
    if (!id.is_string()) return error::make(errc::bad_request, "part_ids: an array of part ids", "part_ids");
    part_ids.emplace_back(id.get_string());
  }
  auto done = uploads.complete(upload_id, part_ids);
  if (!done) return std::move(done).err();
  const file_record f = files.add(done->upload.filename, done->upload.purpose, done->bytes, done->digest, nullptr, 0, now);
  return json::serialize(upload_object(done->upload, "completed", file_object(f)));
}

result<std::string> cancel_upload(upload_registry& uploads, std::string_view upload_id) {
  auto u = uploads.cancel(upload_id);
  if (!u) return std::move(u).err();
  return json::serialize(upload_object(*u, "cancelled", nullptr));
}

std::string upload_part_json(const upload_part_record& part, std::string_view upload_id) {
  return json::serialize(json::object{
      {"id", part.id}, {"object", "upload.part"}, {"created_at", part.created_at}, {"upload_id", upload_id}});
}

}  // namespace sluice::sim
