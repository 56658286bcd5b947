// Which API a request speaks: every part of proxy/ names a route's kind with this.
#pragma once

#include <string_view>

namespace sluice::proxy {

// count_tokens: POST /v1/messages/count_tokens (the Messages API's own body, served only by an
// upstream of dialect: anthropic; docs/dialects.md).
// passthrough: a route whose bodies go through as they are (streamed_routes.hpp), never parsed.
// realtime: GET /v1/realtime, a WebSocket session (realtime_relay.hpp).
enum class api { chat_completions, completions, responses, embeddings, moderations, count_tokens, passthrough, realtime };
// The path of api::count_tokens (the Messages API front and an Anthropic upstream both read it).
inline constexpr std::string_view count_tokens_path = "/v1/messages/count_tokens";

}  // namespace sluice::proxy
