// pipeline::check_whole_answer: structured outputs on a whole (non-stream) answer. Apart from
// respond.cpp so the answers there stay short; the checks themselves are pure functions in
// structured_output*.cpp.
#include "proxy/pipeline.hpp"

namespace sluice::proxy {

task<whole_check> pipeline::check_whole_answer(request_context& ctx, const output_contract& c, upstream_call& call,
                                               unsigned& status, std::string& body) {
  whole_check out;
  output_verdict verdict = check_whole(c, body);
  std::uint64_t attempts = 1;
  while (verdict && c.policy == schema_policy::retry && attempts <= c.retries) {
    ++attempts;
    // One more exchange through the same path as the first (upstream pick, retries, failover).
    exchange again;
    co_await run_attempts(ctx, call, again);
    if (ctx.cancel.cancelled()) {
      out.client_gone = true;
      co_return out;
    }
    if (!again.response) {
      if (again.failure) out.failure = std::move(*again.failure);
      co_return out;
    }
    if (!again.body) {  // an SSE answer to a non-stream request: not something to check
      out.failure = error::make(errc::upstream_protocol, "upstream streamed an answer to a non-stream request");
      co_return out;
    }
    status = again.status;
    body = std::move(*again.body);
    if (status / 100 != 2) break;  // the upstream's own error is the answer
    verdict = check_whole(c, body);
  }
  if (c.policy == schema_policy::retry) out.headers.emplace_back(schema_attempts_header, std::to_string(attempts));
  if (status / 100 != 2) co_return out;
  if (c.policy == schema_policy::annotate) out.headers.emplace_back(schema_verdict_header, verdict_header_value(verdict));
  else if (verdict) out.failure = violation_error(*verdict.error, verdict.choice);
  co_return out;
}

}  // namespace sluice::proxy
