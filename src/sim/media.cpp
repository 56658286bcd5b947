// The Files, Uploads, speech and wrong-method answers of the large-body routes (sim/media.hpp);
// their bodies, when they have any, are small JSON read whole by the session.
#include "sim/media.hpp"

#include <algorithm>
#include <chrono>

#include "sim/audio.hpp"
#include "sim/bytes.hpp"
#include "sim/download.hpp"
#include "sim/files_api.hpp"

namespace sluice::sim {
namespace {

// What a media path names: the route, and the file or upload id in it.
struct media_target {
  enum kind { files, file, file_content, speech, uploads, upload_complete, upload_cancel, streamed, unknown } what;
  std::string_view id = {};
};

media_target media_target_of(std::string_view path) {
  if (path == "/v1/files") return {media_target::files};
  if (path == "/v1/audio/speech") return {media_target::speech};
  if (path == "/v1/uploads") return {media_target::uploads};
  if (upload_route_of(http::verb::post, path)) return {media_target::streamed};
  if (path.starts_with("/v1/files/")) {
    const std::string_view rest = path.substr(std::string_view("/v1/files/").size());
    const auto slash = rest.find('/');
    if (slash == std::string_view::npos && !rest.empty()) return {media_target::file, rest};
    if (slash != std::string_view::npos && slash > 0 && rest.substr(slash) == "/content")
      return {media_target::file_content, rest.substr(0, slash)};
  } else if (path.starts_with("/v1/uploads/")) {
    const std::string_view rest = path.substr(std::string_view("/v1/uploads/").size());
    const auto slash = rest.find('/');
    if (slash != std::string_view::npos && slash > 0 && rest.substr(slash) == "/complete")
      return {media_target::upload_complete, rest.substr(0, slash)};
    if (slash != std::string_view::npos && slash > 0 && rest.substr(slash) == "/cancel")
      return {media_target::upload_cancel, rest.substr(0, slash)};
  }
  return {media_target::unknown};
}

bool method_allowed(media_target::kind k, http::verb v) {
  switch (k) {
    case media_target::files: return v == http::verb::get;  // POST is a streamed upload, never here
    case media_target::file: return v == http::verb::get || v == http::verb::delete_;
    case media_target::file_content: return v == http::verb::get;
    case media_target::streamed: return false;  // POST is, the other methods are answered 405
    default: return v == http::verb::post;
  }
}

// The kept bytes of a file, piece by piece, straight from the store's memory.
class stored_file_source final : public body_source {
 public:
  explicit stored_file_source(std::shared_ptr<const file_bytes> bytes) : bytes_(std::move(bytes)) {}
  std::string_view piece(std::uint64_t offset, std::size_t max, char*) const override {
    const auto index = static_cast<std::size_t>(offset / file_keeper::piece_bytes);
    if (index >= bytes_->size()) return {};
    const std::string_view piece = (*bytes_)[index];
    return piece.substr(static_cast<std::size_t>(offset % file_keeper::piece_bytes), max);
  }

 private:
  std::shared_ptr<const file_bytes> bytes_;
};

// Speech audio: the request's byte pattern, produced where it is sent.
class speech_source final : public body_source {
 public:
  explicit speech_source(std::uint64_t seed) : pattern_(seed) {}
  std::string_view piece(std::uint64_t offset, std::size_t max, char* scratch) const override {
    pattern_.fill(offset, scratch, max);
    return {scratch, max};
  }

 private:
  byte_pattern pattern_;
};

http::response<http::empty_body> stream_head(std::string_view content_type, bool keep_alive) {
  http::response<http::empty_body> head{http::status::ok, 11};
  head.set(http::field::content_type, content_type);
  head.keep_alive(keep_alive);
  return head;
}

std::string_view request_header(const http::request<http::string_body>& req, std::string_view name) {
  const auto it = req.find(name);
  return it == req.end() ? std::string_view{} : std::string_view(it->value());
}

task<response_end> serve_file_content(connection& c, std::string_view id, bool keep) {
  const auto found = c.owner.shared.files.find(id);
  if (!found || !found->content) {
    auto res = !found ? media_error(no_such_file(id), keep)
                      : make_error(404, keep,
                                   "The simulator kept only the size (" + std::to_string(found->bytes) +
                                       " bytes) and FNV-1a digest of file " + std::string(id) +
                                       ", not its bytes: it did not fit in the file-store budget.",
                                   "invalid_request_error", "id");
    co_return co_await write_simple(c, res);
  }
  auto head = stream_head("application/octet-stream", keep);
  const stored_file_source source(found->content);
  auto end = co_await send_streamed(c, head, source, found->bytes, 0);
  co_return end;
}

task<response_end> serve_speech(connection& c, const http::request<http::string_body>& req, bool keep) {
  auto plan = plan_speech(req.body(), request_header(req, "x-sim-speech-bytes"), request_header(req, "x-sim-speech-rate"),
                          c.owner.opts);
  if (!plan) {
    auto res = media_error(plan.err(), keep);
    co_return co_await write_simple(c, res);
  }
  auto head = stream_head(plan->content_type, keep);
  const speech_source source(plan->seed);
  auto end = co_await send_streamed(c, head, source, plan->bytes, plan->rate);
  co_return end;
}

// The answers built whole: file objects and lists, deletes, the Uploads API's JSON routes.
http::response<http::string_body> small_media_answer(worker& w, const http::request<http::string_body>& req,
                                                     media_target t, bool keep) {
  auto answer = [keep](result<std::string> body) { return body ? media_json(std::move(*body), keep) : media_error(body.err(), keep); };
  switch (t.what) {
    case media_target::files: {
      auto q = parse_file_list_query(req.target());
      if (!q) return media_error(q.err(), keep);
      return media_json(file_list_json(w.shared.files.list(q->limit, q->purpose)), keep);
    }
    case media_target::file:
      if (req.method() == http::verb::delete_)
        return w.shared.files.remove(t.id) ? media_json(file_deleted_json(t.id), keep) : media_error(no_such_file(t.id), keep);
      if (auto f = w.shared.files.find(t.id)) return media_json(file_object_json(*f), keep);
      return media_error(no_such_file(t.id), keep);
    case media_target::uploads: return answer(create_upload(w.shared.uploads, req.body(), unix_now()));
    case media_target::upload_complete: {
      auto body = complete_upload(w.shared.uploads, w.shared.files, t.id, req.body(), unix_now());
      if (body) counters::inc(w.count.files_stored);
      return answer(std::move(body));
    }
    default: return answer(cancel_upload(w.shared.uploads, t.id));
  }
}

}  // namespace

bool is_media_path(std::string_view path) {
  return path.starts_with("/v1/files") || path.starts_with("/v1/audio/") || path.starts_with("/v1/images/") ||
         path.starts_with("/v1/uploads");
}

task<response_end> route_media(connection& c, const http::request<http::string_body>& req, std::string_view path) {
  const bool keep = req.keep_alive();
  const media_target t = media_target_of(path);
  if (t.what == media_target::unknown) {
    auto res = make_error(404, keep, "Invalid URL (" + std::string(req.method_string()) + " " + std::string(path) + ")",
                          "invalid_request_error");
    co_return co_await write_simple(c, res);
  }
  if (!method_allowed(t.what, req.method())) {
    auto res = make_error(405, keep, "Method " + std::string(req.method_string()) + " not allowed for " + std::string(path),
                          "invalid_request_error");
    co_return co_await write_simple(c, res);
  }
  if (t.what == media_target::file_content) co_return co_await serve_file_content(c, t.id, keep);
  if (t.what == media_target::speech) co_return co_await serve_speech(c, req, keep);
  auto res = small_media_answer(c.owner, req, t, keep);
  co_return co_await write_simple(c, res);
}

http::response<http::string_body> media_json(std::string body, bool keep_alive) {
  http::response<http::string_body> res{http::status::ok, 11};
  res.set(http::field::content_type, "application/json");
  res.keep_alive(keep_alive);
  res.body() = std::move(body);
  return res;
}

http::response<http::string_body> media_error(const error& e, bool keep_alive) {
  const unsigned status = e.code == errc::not_found           ? 404
                          : e.code == errc::payload_too_large ? 413
                          : e.code == errc::rate_limited      ? 429
                          : e.code == errc::internal          ? 500
                                                              : 400;
  return make_error(status, keep_alive, e.message, "invalid_request_error", e.param);
}

std::int64_t unix_now() noexcept {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace sluice::sim
