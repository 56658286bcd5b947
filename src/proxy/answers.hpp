// The answers every route gives the same way, from a request's context alone: an error in OpenAI's
// shape (with x-should-retry), a refusal (an error counted as rejected, and why) and a small JSON
// body. Each records how the request ended in ctx.end; finish() logs and counts it. Free functions,
// so that the routes beside the pipeline (stored responses) answer as the pipeline does.
#pragma once

#include <string>
#include <string_view>

#include "core/error.hpp"
#include "observability/metrics.hpp"
#include "proxy/request_context.hpp"

namespace sluice::proxy {

namespace bhttp = boost::beast::http;

inline constexpr std::string_view should_retry_header = "x-should-retry";

// The headers every answer carries: the request's id and the gateway's own time so far.
template <class Message>
void stamp(Message& m, const request_context& ctx) {
  m.set("x-request-id", ctx.request_id);
  m.set("x-sluice-overhead-ms", ctx.overhead_header());
}

task<void> send_error(request_context& ctx, const error& e, const bhttp::fields* extra = nullptr);
task<void> refuse(request_context& ctx, const error& e, obs::reject_reason why, const bhttp::fields* extra = nullptr);
task<void> send_json(request_context& ctx, bhttp::status status, std::string body, std::string_view content_type);

struct exchange;
// The failure an exchange ended with (x.failure), its headers and the attempts made (respond.cpp).
task<void> send_failure(request_context& ctx, exchange& x);

}  // namespace sluice::proxy
