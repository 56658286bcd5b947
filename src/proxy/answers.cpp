// The answers every route gives the same way (answers.hpp).
#include "proxy/answers.hpp"

#include "http/error_response.hpp"
#include "proxy/outcomes.hpp"

namespace sluice::proxy {

task<void> send_error(request_context& ctx, const error& e, const bhttp::fields* extra) {
  auto res = http::make_error_response(e, ctx.version, ctx.keep_alive);
  stamp(res, ctx);
  res.set(should_retry_header, should_retry_text(should_retry_value(res.result_int(), &e)));
  if (extra)
    for (const auto& f : *extra) res.set(f.name_string(), f.value());
  auto& end = ctx.end;
  end.kind = end.attempts > 0 ? end_kind::completed : end_kind::refused;  // refused: no upstream tried
  end.status = static_cast<int>(res.result_int());
  end.outcome = outcome_of_error(e);
  end.reason = reason_of(e);
  end.bytes_out = res.body().size();
  auto w = co_await ctx.conn->write(res);
  end.written = w.has_value();
}

task<void> refuse(request_context& ctx, const error& e, obs::reject_reason why, const bhttp::fields* extra) {
  co_await send_error(ctx, e, extra);
  ctx.end.kind = end_kind::refused;
  ctx.end.outcome = obs::outcome::rejected;
  ctx.end.reason = obs::to_string(why);
  ctx.end.rejection = why;
}

task<void> send_json(request_context& ctx, bhttp::status status, std::string body,
                               std::string_view content_type) {
  http::response res{status, ctx.version};
  res.set(bhttp::field::content_type, content_type);
  stamp(res, ctx);
  res.body() = std::move(body);
  res.keep_alive(ctx.keep_alive);
  res.prepare_payload();
  ctx.end.status = static_cast<int>(status);
  ctx.end.outcome = outcome_of_status(static_cast<unsigned>(status));
  ctx.end.bytes_out = res.body().size();
  auto w = co_await ctx.conn->write(res);
  ctx.end.written = w.has_value();
}

}  // namespace sluice::proxy
