#include "proxy/streamed_routes.hpp"

#include <array>

namespace sluice::proxy {

namespace {

using bhttp::verb;
using obs::route;

// OpenAI's REST API as the official SDKs call it (docs/api-routes.md; openai npm 6.49.0).
constexpr std::array table = {
    streamed_route{verb::post, "/v1/audio/speech", route::audio, false, false},
    streamed_route{verb::post, "/v1/audio/transcriptions", route::audio, true, false},
    streamed_route{verb::post, "/v1/audio/translations", route::audio, true, false},
    streamed_route{verb::post, "/v1/images/generations", route::images, false, false},
    streamed_route{verb::post, "/v1/images/edits", route::images, true, false},
    streamed_route{verb::post, "/v1/images/variations", route::images, true, false},
    streamed_route{verb::post, "/v1/files", route::files, true, true},
    streamed_route{verb::get, "/v1/files", route::files, false, true},
    streamed_route{verb::get, "/v1/files/{id}", route::files, false, true},
    streamed_route{verb::delete_, "/v1/files/{id}", route::files, false, true},
    streamed_route{verb::get, "/v1/files/{id}/content", route::files, false, true},
    streamed_route{verb::post, "/v1/uploads", route::uploads, false, true},
    streamed_route{verb::post, "/v1/uploads/{id}/parts", route::uploads, true, true},
    streamed_route{verb::post, "/v1/uploads/{id}/complete", route::uploads, false, true},
    streamed_route{verb::post, "/v1/uploads/{id}/cancel", route::uploads, false, true},
    streamed_route{verb::post, "/v1/batches", route::batches, false, true},
    streamed_route{verb::get, "/v1/batches", route::batches, false, true},
    streamed_route{verb::get, "/v1/batches/{id}", route::batches, false, true},
    streamed_route{verb::post, "/v1/batches/{id}/cancel", route::batches, false, true},
    streamed_route{verb::post, "/v1/vector_stores", route::vector_stores, false, true},
    streamed_route{verb::get, "/v1/vector_stores", route::vector_stores, false, true},
    streamed_route{verb::get, "/v1/vector_stores/{id}", route::vector_stores, false, true},
    streamed_route{verb::post, "/v1/vector_stores/{id}", route::vector_stores, false, true},
    streamed_route{verb::delete_, "/v1/vector_stores/{id}", route::vector_stores, false, true},
    streamed_route{verb::post, "/v1/vector_stores/{id}/search", route::vector_stores, false, true},
    streamed_route{verb::post, "/v1/vector_stores/{id}/files", route::vector_stores, false, true},
    streamed_route{verb::get, "/v1/vector_stores/{id}/files", route::vector_stores, false, true},
    streamed_route{verb::get, "/v1/vector_stores/{id}/files/{id}", route::vector_stores, false, true},
    streamed_route{verb::post, "/v1/vector_stores/{id}/files/{id}", route::vector_stores, false, true},
    streamed_route{verb::delete_, "/v1/vector_stores/{id}/files/{id}", route::vector_stores, false, true},
    streamed_route{verb::get, "/v1/vector_stores/{id}/files/{id}/content", route::vector_stores, false, true},
    streamed_route{verb::post, "/v1/vector_stores/{id}/file_batches", route::vector_stores, false, true},
    streamed_route{verb::get, "/v1/vector_stores/{id}/file_batches/{id}", route::vector_stores, false, true},
    streamed_route{verb::post, "/v1/vector_stores/{id}/file_batches/{id}/cancel", route::vector_stores, false, true},
    streamed_route{verb::get, "/v1/vector_stores/{id}/file_batches/{id}/files", route::vector_stores, false, true},
    streamed_route{verb::post, "/v1/fine_tuning/jobs", route::fine_tuning, false, true},
    streamed_route{verb::get, "/v1/fine_tuning/jobs", route::fine_tuning, false, true},
    streamed_route{verb::get, "/v1/fine_tuning/jobs/{id}", route::fine_tuning, false, true},
    streamed_route{verb::post, "/v1/fine_tuning/jobs/{id}/cancel", route::fine_tuning, false, true},
    streamed_route{verb::post, "/v1/fine_tuning/jobs/{id}/pause", route::fine_tuning, false, true},
    streamed_route{verb::post, "/v1/fine_tuning/jobs/{id}/resume", route::fine_tuning, false, true},
    streamed_route{verb::get, "/v1/fine_tuning/jobs/{id}/events", route::fine_tuning, false, true},
    streamed_route{verb::get, "/v1/fine_tuning/jobs/{id}/checkpoints", route::fine_tuning, false, true},
    // The Realtime API's REST helpers: an ephemeral key or a session minted for the upstream's
    // account (a credential: only ever the client's own account's), and SIP calls' controls.
    streamed_route{verb::post, "/v1/realtime/client_secrets", route::realtime, false, true},
    streamed_route{verb::post, "/v1/realtime/sessions", route::realtime, false, true},
    streamed_route{verb::post, "/v1/realtime/transcription_sessions", route::realtime, false, true},
    streamed_route{verb::post, "/v1/realtime/calls/{id}/accept", route::realtime, false, true},
    streamed_route{verb::post, "/v1/realtime/calls/{id}/hangup", route::realtime, false, true},
    streamed_route{verb::post, "/v1/realtime/calls/{id}/refer", route::realtime, false, true},
    streamed_route{verb::post, "/v1/realtime/calls/{id}/reject", route::realtime, false, true},
    // Assistants and threads, evals, containers, videos, skills, ChatKit and fine-tuning's other
    // objects: stored objects, under the same rule.
    streamed_route{verb::delete_, "/v1/assistants/{id}", route::assistants, false, true},
    streamed_route{verb::delete_, "/v1/threads/{id}", route::assistants, false, true},
    streamed_route{verb::delete_, "/v1/threads/{id}/messages/{id}", route::assistants, false, true},
    streamed_route{verb::get, "/v1/assistants", route::assistants, false, true},
    streamed_route{verb::get, "/v1/assistants/{id}", route::assistants, false, true},
    streamed_route{verb::get, "/v1/threads/{id}", route::assistants, false, true},
    streamed_route{verb::get, "/v1/threads/{id}/messages", route::assistants, false, true},
    streamed_route{verb::get, "/v1/threads/{id}/messages/{id}", route::assistants, false, true},
    streamed_route{verb::get, "/v1/threads/{id}/runs", route::assistants, false, true},
    streamed_route{verb::get, "/v1/threads/{id}/runs/{id}", route::assistants, false, true},
    streamed_route{verb::get, "/v1/threads/{id}/runs/{id}/steps", route::assistants, false, true},
    streamed_route{verb::get, "/v1/threads/{id}/runs/{id}/steps/{id}", route::assistants, false, true},
    streamed_route{verb::post, "/v1/assistants", route::assistants, false, true},
    streamed_route{verb::post, "/v1/assistants/{id}", route::assistants, false, true},
    streamed_route{verb::post, "/v1/threads", route::assistants, false, true},
    streamed_route{verb::post, "/v1/threads/runs", route::assistants, false, true},
    streamed_route{verb::post, "/v1/threads/{id}", route::assistants, false, true},
    streamed_route{verb::post, "/v1/threads/{id}/messages", route::assistants, false, true},
    streamed_route{verb::post, "/v1/threads/{id}/messages/{id}", route::assistants, false, true},
    streamed_route{verb::post, "/v1/threads/{id}/runs", route::assistants, false, true},
    streamed_route{verb::post, "/v1/threads/{id}/runs/{id}", route::assistants, false, true},
    streamed_route{verb::post, "/v1/threads/{id}/runs/{id}/cancel", route::assistants, false, true},
    streamed_route{verb::post, "/v1/threads/{id}/runs/{id}/submit_tool_outputs", route::assistants, false, true},
    streamed_route{verb::delete_, "/v1/chatkit/threads/{id}", route::chatkit, false, true},
    streamed_route{verb::get, "/v1/chatkit/threads", route::chatkit, false, true},
    streamed_route{verb::get, "/v1/chatkit/threads/{id}", route::chatkit, false, true},
    streamed_route{verb::get, "/v1/chatkit/threads/{id}/items", route::chatkit, false, true},
    streamed_route{verb::post, "/v1/chatkit/sessions", route::chatkit, false, true},
    streamed_route{verb::post, "/v1/chatkit/sessions/{id}/cancel", route::chatkit, false, true},
    streamed_route{verb::delete_, "/v1/containers/{id}", route::containers, false, true},
    streamed_route{verb::delete_, "/v1/containers/{id}/files/{id}", route::containers, false, true},
    streamed_route{verb::get, "/v1/containers", route::containers, false, true},
    streamed_route{verb::get, "/v1/containers/{id}", route::containers, false, true},
    streamed_route{verb::get, "/v1/containers/{id}/files", route::containers, false, true},
    streamed_route{verb::get, "/v1/containers/{id}/files/{id}", route::containers, false, true},
    streamed_route{verb::get, "/v1/containers/{id}/files/{id}/content", route::containers, false, true},
    streamed_route{verb::post, "/v1/containers", route::containers, false, true},
    streamed_route{verb::post, "/v1/containers/{id}/files", route::containers, true, true},
    streamed_route{verb::delete_, "/v1/evals/{id}", route::evals, false, true},
    streamed_route{verb::delete_, "/v1/evals/{id}/runs/{id}", route::evals, false, true},
    streamed_route{verb::get, "/v1/evals", route::evals, false, true},
    streamed_route{verb::get, "/v1/evals/{id}", route::evals, false, true},
    streamed_route{verb::get, "/v1/evals/{id}/runs", route::evals, false, true},
    streamed_route{verb::get, "/v1/evals/{id}/runs/{id}", route::evals, false, true},
    streamed_route{verb::get, "/v1/evals/{id}/runs/{id}/output_items", route::evals, false, true},
    streamed_route{verb::get, "/v1/evals/{id}/runs/{id}/output_items/{id}", route::evals, false, true},
    streamed_route{verb::post, "/v1/evals", route::evals, false, true},
    streamed_route{verb::post, "/v1/evals/{id}", route::evals, false, true},
    streamed_route{verb::post, "/v1/evals/{id}/runs", route::evals, false, true},
    streamed_route{verb::post, "/v1/evals/{id}/runs/{id}", route::evals, false, true},
    streamed_route{verb::delete_, "/v1/fine_tuning/checkpoints/{id}/permissions/{id}", route::fine_tuning, false, true},
    streamed_route{verb::get, "/v1/fine_tuning/checkpoints/{id}/permissions", route::fine_tuning, false, true},
    streamed_route{verb::post, "/v1/fine_tuning/alpha/graders/run", route::fine_tuning, false, true},
    streamed_route{verb::post, "/v1/fine_tuning/alpha/graders/validate", route::fine_tuning, false, true},
    streamed_route{verb::delete_, "/v1/skills/{id}", route::skills, false, true},
    streamed_route{verb::delete_, "/v1/skills/{id}/versions/{id}", route::skills, false, true},
    streamed_route{verb::get, "/v1/skills", route::skills, false, true},
    streamed_route{verb::get, "/v1/skills/{id}", route::skills, false, true},
    streamed_route{verb::get, "/v1/skills/{id}/content", route::skills, false, true},
    streamed_route{verb::get, "/v1/skills/{id}/versions", route::skills, false, true},
    streamed_route{verb::get, "/v1/skills/{id}/versions/{id}", route::skills, false, true},
    streamed_route{verb::get, "/v1/skills/{id}/versions/{id}/content", route::skills, false, true},
    streamed_route{verb::post, "/v1/skills", route::skills, true, true},
    streamed_route{verb::post, "/v1/skills/{id}", route::skills, false, true},
    streamed_route{verb::post, "/v1/skills/{id}/versions", route::skills, true, true},
    streamed_route{verb::delete_, "/v1/videos/{id}", route::videos, false, true},
    streamed_route{verb::get, "/v1/videos", route::videos, false, true},
    streamed_route{verb::get, "/v1/videos/characters/{id}", route::videos, false, true},
    streamed_route{verb::get, "/v1/videos/{id}", route::videos, false, true},
    streamed_route{verb::get, "/v1/videos/{id}/content", route::videos, false, true},
    streamed_route{verb::post, "/v1/videos", route::videos, true, true},
    streamed_route{verb::post, "/v1/videos/characters", route::videos, true, true},
    streamed_route{verb::post, "/v1/videos/edits", route::videos, true, true},
    streamed_route{verb::post, "/v1/videos/extensions", route::videos, true, true},
    streamed_route{verb::post, "/v1/videos/{id}/remix", route::videos, false, true},
    // A Responses request's token count and compaction (stateless), and a response the upstream
    // stored (`store: true`, an id the gateway did not make: pipeline::parse sends the gateway's own
    // ids to its store, docs/queue.md).
    streamed_route{verb::post, "/v1/responses/input_tokens", route::responses, false, false},
    streamed_route{verb::post, "/v1/responses/compact", route::responses, false, false},
    streamed_route{verb::get, "/v1/responses/{id}", route::responses, false, true},
    streamed_route{verb::delete_, "/v1/responses/{id}", route::responses, false, true},
    streamed_route{verb::post, "/v1/responses/{id}/cancel", route::responses, false, true},
    streamed_route{verb::get, "/v1/responses/{id}/input_items", route::responses, false, true},
    // Stored chat completions (`store: true`): the POST that makes one is the chat route's.
    streamed_route{verb::get, "/v1/chat/completions", route::chat_completions, false, true},
    streamed_route{verb::get, "/v1/chat/completions/{id}", route::chat_completions, false, true},
    streamed_route{verb::post, "/v1/chat/completions/{id}", route::chat_completions, false, true},
    streamed_route{verb::delete_, "/v1/chat/completions/{id}", route::chat_completions, false, true},
    streamed_route{verb::get, "/v1/chat/completions/{id}/messages", route::chat_completions, false, true},
    streamed_route{verb::post, "/v1/conversations", route::conversations, false, true},
    streamed_route{verb::get, "/v1/conversations/{id}", route::conversations, false, true},
    streamed_route{verb::post, "/v1/conversations/{id}", route::conversations, false, true},
    streamed_route{verb::delete_, "/v1/conversations/{id}", route::conversations, false, true},
    streamed_route{verb::post, "/v1/conversations/{id}/items", route::conversations, false, true},
    streamed_route{verb::get, "/v1/conversations/{id}/items", route::conversations, false, true},
    streamed_route{verb::get, "/v1/conversations/{id}/items/{id}", route::conversations, false, true},
    streamed_route{verb::delete_, "/v1/conversations/{id}/items/{id}", route::conversations, false, true},
};

bool plausible_id(std::string_view id) noexcept {
  if (id.empty() || id.size() > 128 || id == "." || id == "..") return false;
  for (char c : id)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.'))
      return false;
  return true;
}

// The next segment of `path` after a '/', advancing it; nullopt at its end.
std::optional<std::string_view> next_segment(std::string_view& path) noexcept {
  if (path.empty() || path.front() != '/') return std::nullopt;
  path.remove_prefix(1);
  const std::size_t end = path.find('/');
  const std::string_view seg = path.substr(0, end);
  path.remove_prefix(end == std::string_view::npos ? path.size() : end);
  return seg;
}

bool matches(std::string_view pattern, std::string_view path) noexcept {
  while (true) {
    const auto want = next_segment(pattern);
    const auto got = next_segment(path);
    if (!want || !got) return !want && !got;
    if (*want == "{id}" ? !plausible_id(*got) : *want != *got) return false;
  }
}

}  // namespace

std::span<const streamed_route> streamed_route_table() noexcept { return table; }

const streamed_route& model_delete_route() noexcept {
  static constexpr streamed_route row{verb::delete_, "/v1/models/{model}", route::models, false, true};
  return row;
}

const streamed_route* find_streamed_route(bhttp::verb method, std::string_view path, bool& path_known) noexcept {
  path_known = false;
  for (const auto& r : table) {
    if (!matches(r.pattern, path)) continue;
    if (r.method == method) return &r;
    path_known = true;
  }
  return nullptr;
}

bool may_replay(bhttp::verb method, bool reached_upstream) noexcept {
  return !reached_upstream || method == verb::get || method == verb::delete_;
}

std::uint64_t upload_policy::streamed_body_cap(const http::request& head) const noexcept {
  // Asked of every request: the upload routes are POSTs under these few prefixes, so every other
  // request (a chat completion) is decided in a few compares, not by a walk of the table.
  constexpr std::string_view upload_prefixes[] = {"/v1/files",      "/v1/audio/", "/v1/images/", "/v1/uploads/",
                                                  "/v1/containers/", "/v1/skills",  "/v1/videos"};
  if (head.method() != verb::post) return 0;
  std::string_view target = head.target();
  bool under = false;
  for (auto p : upload_prefixes) under = under || target.starts_with(p);
  if (!under) return 0;
  target = target.substr(0, target.find('?'));
  bool known = false;
  const auto* r = find_streamed_route(head.method(), target, known);
  return r && r->upload ? cap_ : 0;
}

task<result<std::size_t>> client_upload::read_some(char* dst, std::size_t cap) {
  auto got = co_await conn_.read_body_some(dst, cap);
  if (!got) failure_ = got.err();
  co_return got;
}

}  // namespace sluice::proxy
