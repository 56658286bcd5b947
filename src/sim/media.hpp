// The simulator's large-body routes as the session serves them: Files, Uploads, audio and image
// edits. The multipart uploads (POST /v1/files, /v1/audio/transcriptions and /translations,
// /v1/images/edits and /variations, /v1/uploads/{id}/parts) have their bodies read in bounded
// pieces after the head (upload.cpp); the rest read theirs whole, as every other route (media.cpp).
// On the connection's worker thread only.
#pragma once

#include <boost/beast/http/parser.hpp>

#include <optional>
#include <string_view>

#include "sim/worker.hpp"

namespace sluice::sim {

enum class upload_route { files, transcriptions, translations, image_edits, image_variations, upload_part };

// The streamed-upload route that `method` on `path` (no query) is, if it is one.
std::optional<upload_route> upload_route_of(http::verb method, std::string_view path);

// Serves a streamed upload whose head `head` has read, its body not yet: the body is read into a
// fixed 64KiB buffer under max-upload, each piece fed to a multipart parser, and then answered. A
// client that leaves mid-body counts in uploads_aborted and stores nothing. `refused`: the answer
// the credential check gave instead (the body is drained first, unless the client waits for
// 100-continue). `head` is moved from.
task<response_end> serve_upload(connection& c, http::request_parser<http::string_body>& head, upload_route route,
                                std::optional<http::response<http::string_body>> refused);

// The paths of the Files, Uploads, audio and image routes (the streamed uploads' paths included,
// for their wrong-method answers).
bool is_media_path(std::string_view path);
// Serves a request to one of them whose body was read whole.
task<response_end> route_media(connection& c, const http::request<http::string_body>& req, std::string_view path);

// A JSON answer, and an error as an OpenAI-shaped answer with the status its errc maps to.
http::response<http::string_body> media_json(std::string body, bool keep_alive);
http::response<http::string_body> media_error(const error& e, bool keep_alive);
// Seconds since the epoch, for created_at.
std::int64_t unix_now() noexcept;

}  // namespace sluice::sim
