// An upstream that speaks Anthropic's Messages API (`dialect: anthropic`) behind the OpenAI route
// /v1/chat/completions (docs/dialects.md, ADR 0025). Two seams beside the attempt loop carry it,
// and nothing after them knows: the relay, structured outputs, token accounting and metrics see
// chat completions.
// - address_anthropic (from prepare_attempt): the attempt's body becomes the Messages request
//   (translated once per request, the chat body kept for an attempt on another upstream), its path
//   /v1/messages, its credential x-api-key with anthropic-version;
// - adopt_anthropic_answer (after the head): a whole answer and an error body are translated, a
//   2xx stream gets a body filter that turns its events into chat chunks as they are read.
// One thread: the request's.
#pragma once

#include <optional>
#include <string_view>

#include "core/error.hpp"
#include "proxy/attempts.hpp"
#include "proxy/request_context.hpp"
#include "routing/router.hpp"

namespace sluice::proxy {

// The attempt on `u` (an Anthropic upstream) for a request to `path`: the request prepared, or the
// error it cannot be sent with (a route the Messages API does not serve, a chat field it cannot
// carry: a bad_request naming it).
std::optional<error> address_anthropic(upstream_call& call, const routing::upstream_state& u, std::string_view path);

// A route only an Anthropic upstream serves (POST /v1/messages/count_tokens: the Messages API's
// tokenizer), asked of an OpenAI-compatible upstream `u`: the 404 that says so; nullopt otherwise.
std::optional<error> refuse_anthropic_only(const routing::upstream_state& u, std::string_view path);

// The Messages API's credential on `req`: x-api-key with the key of `authorization` ("Bearer <key>",
// the gateway's or a pass-through client's; none when empty) and anthropic-version, never the OpenAI
// headers (Authorization, OpenAI-Organization, OpenAI-Project).
void set_anthropic_credentials(upstream::request& req, const routing::upstream_state& u, std::string_view authorization);

// The chat body back in the request after an attempt on an Anthropic upstream.
void restore_chat_body(upstream_call& call) noexcept;

// The answer of an Anthropic upstream, once its head is read (and a whole body with it): the status
// as an OpenAI client expects it (529 -> 503), a whole body translated into a chat completion or an
// OpenAI-shaped error, a 2xx stream's filter set (`max_event`: the relay's stream-buffer bound).
// Returns the attempt's outcome `out` for that: a 2xx whole answer that cannot be translated failed
// like a body that could not be read (retried; nothing has gone to the client).
attempt_outcome adopt_anthropic_answer(exchange& x, const request_context& ctx, const upstream_call& call,
                                       std::size_t max_event, attempt_outcome out);

}  // namespace sluice::proxy
