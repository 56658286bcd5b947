// The Anthropic Messages API side of the simulator (POST /v1/messages): its request body read into
// a completion_request, and Anthropic's error shapes. Pure functions, no I/O; the answer's wire
// shapes (whole and streamed) are sim::generator's (messages_content.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "sim/request.hpp"

namespace sluice::sim {

// The largest max_tokens the Messages API accepts (a signed 32-bit integer).
inline constexpr std::uint64_t max_messages_tokens = 2'147'483'647;

// Parses and checks a Messages request. `model` (a string), `max_tokens` (1..max_messages_tokens)
// and `messages` (a non-empty array of {"role":"user"|"assistant","content":string|blocks}) are
// required; `system` (a string or text blocks), `stream`, `tools` and `tool_choice` are read
// ({"type":"any"}: the first tool; {"type":"tool","name":N}: N; "auto", "none" or no tools: a text
// answer); `stop_sequences`, `temperature` and the rest are ignored. The prompt's tokens are
// estimated from its text as the chat path does. A bad field is a bad_request naming it (`param`).
result<completion_request> parse_messages(std::string_view body, std::uint64_t seed);

// {"type":"error","error":{"type":T,"message":M}}
std::string anthropic_error_body(std::string_view type, std::string_view message);

// POST /v1/messages/count_tokens: {"input_tokens":N}, N the prompt estimate parse_messages makes
// (model and messages required, max_tokens not); or a bad_request naming the field.
result<std::string> count_tokens_body(std::string_view body);

// Anthropic's error type for an HTTP status: 400 invalid_request_error, 401 authentication_error,
// 403 permission_error, 404 not_found_error, 413 request_too_large, 429 rate_limit_error, 529
// overloaded_error, any other 5xx api_error (and other 4xx invalid_request_error).
std::string_view anthropic_error_type(int status) noexcept;

}  // namespace sluice::sim
