#include "proxy/options.hpp"

#include "config/option_table.hpp"

namespace sluice::proxy {

void options::register_options(config::option_table& t) {
  t.add_size("stream-buffer", "per-stream buffer bound: unsent upstream bytes and the largest SSE event",
             stream_buffer)
      .add_size("stream-buffer-initial", "initial per-stream buffer (grows up to stream-buffer on demand)",
                stream_buffer_initial)
      .add_list("routes", "allow-list of API routes served, by metric label (absent: all): chat_completions, "
                          "completions, responses, models, messages, embeddings, moderations",
                routes);
}

namespace {
// The routes the allow-list may name: every API route (the probes are always served).
constexpr obs::route api_routes[] = {obs::route::chat_completions, obs::route::completions, obs::route::responses,
                                     obs::route::models,           obs::route::messages,    obs::route::embeddings,
                                     obs::route::moderations};
}  // namespace

result<void> options::finish() const {
  for (const auto& name : routes) {
    bool known = false;
    for (auto r : api_routes) known = known || obs::to_string(r) == name;
    if (!known) return error::make(errc::bad_request, "routes: '" + name + "' is not a route; use chat_completions, "
                                                      "completions, responses, models, messages, embeddings or moderations");
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
