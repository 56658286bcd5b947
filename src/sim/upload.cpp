// The streamed-upload routes (sim/media.hpp): the body read after the head into one fixed buffer,
// each piece fed to the multipart parser (or only digested when the body is not multipart), so a
// 50 MB upload costs the same memory as a 50 KB one; then the route's answer.
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/asio/write.hpp>

#include <memory>

#include "core/units.hpp"
#include "sim/audio.hpp"
#include "sim/file_store.hpp"
#include "sim/files_api.hpp"
#include "sim/form.hpp"
#include "sim/images.hpp"
#include "sim/media.hpp"
#include "sim/multipart.hpp"

namespace sluice::sim {
namespace {

constexpr std::size_t upload_piece_bytes = 64 * 1024;

// Where the body's pieces go: the multipart parser and its form, or (a body that is not
// multipart, or one being drained after a refusal) only a digest.
struct body_feed {
  std::optional<multipart::parser> parser;
  form_collector* form = nullptr;
  fnv1a_hasher raw;
  multipart::failure failed = multipart::failure::none;

  void feed(std::string_view bytes) {
    if (!parser) raw.feed(bytes);
    else if (failed == multipart::failure::none) failed = parser->feed(bytes, *form);
  }
  void finish() {
    if (parser && failed == multipart::failure::none) failed = parser->finish();
  }
};

// The first `file` part of a POST /v1/files goes to the store's keeper as it arrives.
class keep_file_part final : public file_sink {
 public:
  explicit keep_file_part(file_keeper& k) : keeper_(k) {}
  void on_file_begin(const form_file& f) override { active_ = !seen_ && f.field == "file"; }
  void on_file_data(std::string_view bytes) override {
    if (active_) keeper_.append(bytes);
  }
  void on_file_end() override {
    seen_ = seen_ || active_;
    active_ = false;
  }

 private:
  file_keeper& keeper_;
  bool active_ = false, seen_ = false;
};

enum class body_read { complete, aborted, too_large, malformed };

body_read read_failure(const error_code& ec) {
  if (ec == http::error::body_limit) return body_read::too_large;
  const bool http_error = ec.category() == http::make_error_code(http::error::bad_version).category();
  if (http_error && ec != http::error::end_of_stream && ec != http::error::partial_message) return body_read::malformed;
  return body_read::aborted;  // EOF, a reset, or the server stopping: the client's bytes stopped coming
}

// Reads the body through one 64KiB buffer, feeding every piece on before the next read.
task<body_read> read_streamed_body(connection& c, http::request_parser<http::buffer_body>& p, body_feed& feed) {
  std::unique_ptr<char[]> piece(new char[upload_piece_bytes]);
  while (!p.is_done()) {
    p.get().body().data = piece.get();
    p.get().body().size = upload_piece_bytes;
    error_code ec;
    co_await http::async_read(c.socket, c.buffer, p, ec_out(ec));
    const std::size_t n = upload_piece_bytes - p.get().body().size;
    if (n > 0) {
      c.owner.count.upload_bytes.fetch_add(n, std::memory_order_relaxed);
      feed.feed({piece.get(), n});
    }
    if (ec && ec != http::error::need_buffer) co_return read_failure(ec);
  }
  feed.finish();
  co_return body_read::complete;
}

bool expects_continue(const http::request<http::string_body>& req) {
  const auto it = req.find(http::field::expect);
  if (it == req.end()) return false;
  std::string v(it->value());
  for (auto& ch : v) ch = static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
  return v == "100-continue";
}

error form_refusal(std::string message, std::string param = {}) {
  return error::make(errc::bad_request, std::move(message), std::move(param));
}

// POST /v1/files: the file object, its bytes kept if the keeper kept them all.
result<std::string> store_uploaded_file(worker& w, const form_collector& form, file_keeper& keeper) {
  if (form.problem()) return *form.problem();
  const form_file* file = form.file("file");
  if (!file) return form_refusal("Missing required parameter: 'file'.", "file");
  const std::string* purpose = form.field("purpose");
  if (!purpose || purpose->empty()) return form_refusal("Missing required parameter: 'purpose'.", "purpose");
  if (!valid_file_purpose(*purpose)) return form_refusal("Invalid purpose: '" + *purpose + "'.", "purpose");
  const file_record f = keeper.commit(file->filename.empty() ? "upload" : file->filename, *purpose, file->digest.size,
                                      file->digest.value, unix_now());
  counters::inc(w.count.files_stored);
  return file_object_json(f);
}

result<std::string> store_upload_part(worker& w, const form_collector& form, std::string_view upload_id) {
  if (form.problem()) return *form.problem();
  const form_file* data = form.file("data");
  if (!data) return form_refusal("Missing required parameter: 'data'.", "data");
  auto part = w.shared.uploads.add_part(upload_id, data->digest.size, data->digest.value, unix_now());
  if (!part) return std::move(part).err();
  return upload_part_json(*part, upload_id);
}

// The route's answer once its whole body was read and parsed; `streams` is set for an SSE body.
http::response<http::string_body> upload_answer(worker& w, upload_route route, const form_collector& form,
                                                file_keeper& keeper, std::string_view path, bool keep) {
  auto answer = [keep](result<std::string> body) { return body ? media_json(std::move(*body), keep) : media_error(body.err(), keep); };
  switch (route) {
    case upload_route::files: return answer(store_uploaded_file(w, form, keeper));
    case upload_route::upload_part: {
      const std::string_view id = path.substr(std::string_view("/v1/uploads/").size());
      return answer(store_upload_part(w, form, id.substr(0, id.find('/'))));
    }
    case upload_route::image_edits:
    case upload_route::image_variations: {
      auto req = image_request_of(form, route == upload_route::image_edits);
      return answer(req ? result<std::string>(images_body(*req, unix_now())) : result<std::string>(req.err()));
    }
    default: break;
  }
  auto req = transcription_request_of(form, route == upload_route::translations);
  if (!req) return media_error(req.err(), keep);
  auto reply = transcription_reply(*req, transcript_of(req->file_digest, req->file_bytes));
  auto res = media_json(std::move(reply.body), keep);
  res.set(http::field::content_type, reply.content_type);
  if (req->stream) res.chunked(true);
  return res;
}

// Writes an answer as it is framed: Content-Length, or chunked for a stream of events.
task<response_end> write_upload_answer(connection& c, http::response<http::string_body>& res) {
  if (!res.chunked()) co_return co_await write_simple(c, res);
  c.owner.count.count_status(res.result_int());
  error_code ec;
  co_await http::async_write(c.socket, res, ec_out(ec));
  if (ec) co_return response_end::peer_gone;
  co_return res.keep_alive() ? response_end::done : response_end::close;
}

// An answer that ends the connection: its body cannot be trusted to end at a message boundary.
task<response_end> refuse_and_close(connection& c, unsigned status, std::string message) {
  auto res = make_error(status, false, message, "invalid_request_error");
  auto end = co_await write_simple(c, res);
  (void)end;
  co_return response_end::close;
}

std::string_view path_only(std::string_view target) { return target.substr(0, target.find('?')); }

}  // namespace

std::optional<upload_route> upload_route_of(http::verb method, std::string_view path) {
  if (method != http::verb::post) return std::nullopt;
  if (path == "/v1/files") return upload_route::files;
  if (path == "/v1/audio/transcriptions") return upload_route::transcriptions;
  if (path == "/v1/audio/translations") return upload_route::translations;
  if (path == "/v1/images/edits") return upload_route::image_edits;
  if (path == "/v1/images/variations") return upload_route::image_variations;
  constexpr std::string_view uploads = "/v1/uploads/", parts = "/parts";
  if (path.starts_with(uploads) && path.ends_with(parts) && path.size() > uploads.size() + parts.size() &&
      path.substr(uploads.size(), path.size() - uploads.size() - parts.size()).find('/') == std::string_view::npos)
    return upload_route::upload_part;
  return std::nullopt;
}

task<response_end> serve_upload(connection& c, http::request_parser<http::string_body>& head, upload_route route,
                                std::optional<http::response<http::string_body>> refused) {
  worker& w = c.owner;
  const std::string path(path_only(head.get().target()));
  const bool waits = expects_continue(head.get());
  if (refused && waits) {  // the client has not sent its body and will not: answer, then close
    refused->keep_alive(false);
    auto end = co_await write_simple(c, *refused);
    (void)end;
    co_return response_end::close;
  }
  // Messages named before any co_await takes them (GCC 12 mishandles temporaries across suspensions).
  const std::string too_large = "Request body exceeds " + format_size(w.opts.max_upload_bytes);
  if (head.content_length() && *head.content_length() > w.opts.max_upload_bytes)
    co_return co_await refuse_and_close(c, 413, too_large);
  const auto ct = head.get().find(http::field::content_type);
  const auto boundary = ct == head.get().end() ? std::nullopt : multipart::boundary_of(ct->value());
  file_keeper keeper(w.shared.files);
  keep_file_part keep_part(keeper);
  form_collector form({"file", "data", "image", "image[]", "mask"}, route == upload_route::files ? &keep_part : nullptr);
  body_feed feed;
  if (boundary && !refused) {
    feed.parser.emplace(*boundary);
    feed.form = &form;
  }
  http::request_parser<http::buffer_body> body(std::move(head));
  body.body_limit(w.opts.max_upload_bytes);
  if (waits) {
    static constexpr std::string_view go_on = "HTTP/1.1 100 Continue\r\n\r\n";
    error_code ec;
    co_await net::async_write(c.socket, net::buffer(go_on.data(), go_on.size()), ec_out(ec));
    if (ec) co_return response_end::peer_gone;
  }
  const body_read outcome = co_await read_streamed_body(c, body, feed);
  if (outcome == body_read::aborted) {
    counters::inc(w.count.uploads_aborted);
    co_return response_end::peer_gone;  // the keeper gives back what it held; nothing is stored
  }
  if (outcome == body_read::too_large) co_return co_await refuse_and_close(c, 413, too_large);
  const std::string malformed = "Malformed HTTP request body";
  if (outcome == body_read::malformed) co_return co_await refuse_and_close(c, 400, malformed);
  const bool keep = body.get().keep_alive();
  std::optional<http::response<http::string_body>> res = std::move(refused);
  if (!res && !boundary)
    res = make_error(400, keep, "Invalid Content-Type header: expected multipart/form-data with a boundary.",
                     "invalid_request_error");
  else if (!res && feed.failed != multipart::failure::none)
    res = make_error(400, keep, std::string(multipart::describe(feed.failed)), "invalid_request_error");
  if (!res) res = upload_answer(w, route, form, keeper, path, keep);
  co_return co_await write_upload_answer(c, *res);
}

}  // namespace sluice::sim
