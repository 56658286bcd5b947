#include "proxy/options.hpp"

#include "config/option_table.hpp"

namespace sluice::proxy {

void options::register_options(config::option_table& t) {
  t.add_size("stream-buffer", "per-stream buffer bound: unsent upstream bytes and the largest SSE event",
             stream_buffer)
      .add_size("stream-buffer-initial", "initial per-stream buffer (grows up to stream-buffer on demand)",
                stream_buffer_initial)
      .add_list("routes", "allow-list of API routes served, by metric label (absent: all): chat_completions, "
                          "completions, responses, models, messages, embeddings, moderations, audio, images, files, uploads, "
                          "batches, vector_stores, fine_tuning, conversations, realtime, assistants, chatkit, containers, evals, "
                          "skills, videos",
                routes)
      .add_size("max-upload-bytes", "largest request body of a streamed upload route (files, audio, image edits, "
                                    "upload parts; over it: 413)",
                max_upload_bytes)
      .add_size("realtime-max-message-bytes", "largest message either side of a Realtime session may send "
                                              "(past it: the session closes with 1009)",
                realtime_max_message_bytes)
      .add_duration("realtime-idle-timeout", "a Realtime session side silent this long, its pings unanswered, "
                                             "ends the session",
                    realtime_idle_timeout);
}

namespace {
// The routes the allow-list may name: every API route (the probes are always served).
constexpr obs::route api_routes[] = {obs::route::chat_completions, obs::route::completions,  obs::route::responses,
                                     obs::route::models,           obs::route::messages,     obs::route::embeddings,
                                     obs::route::moderations,      obs::route::audio,        obs::route::images,
                                     obs::route::files,            obs::route::uploads,      obs::route::batches,
                                     obs::route::vector_stores,    obs::route::fine_tuning,  obs::route::conversations,
                                     obs::route::realtime,         obs::route::assistants,   obs::route::chatkit,
                                     obs::route::containers,       obs::route::evals,        obs::route::skills,
                                     obs::route::videos};
}  // namespace

result<void> options::finish() const {
  if (max_upload_bytes == 0) return error::make(errc::bad_request, "max-upload-bytes: must be positive");
  if (realtime_max_message_bytes == 0)
    return error::make(errc::bad_request, "realtime-max-message-bytes: must be positive");
  if (realtime_idle_timeout <= duration::zero())
    return error::make(errc::bad_request, "realtime-idle-timeout: must be positive");
  for (const auto& name : routes) {
    bool known = false;
    for (auto r : api_routes) known = known || obs::to_string(r) == name;
    if (!known) return error::make(errc::bad_request, "routes: '" + name + "' is not a route; use chat_completions, "
                                                      "completions, responses, models, messages, embeddings, moderations, audio, images, "
                                                      "files, uploads, batches, vector_stores, fine_tuning, conversations, realtime, "
                                                      "assistants, chatkit, containers, evals, skills or videos");
  }
  return ok;
}

bool options::serves(obs::route r) const noexcept {
  if (routes.empty() || r == obs::route::healthz || r == obs::route::readyz || r == obs::route::metrics) return true;
  for (const auto& name : routes)
    if (obs::to_string(r) == name) return true;
  return false;
}

}  // namespace sluice::proxy
