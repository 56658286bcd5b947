// The answers of an exchange (errors, refusals and small bodies are answers.cpp's): the failure an exchange ended with, a whole
// upstream answer, and a relayed stream. Each records how the request ended in ctx.end; finish()
// logs and counts it.
#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>

#include "http/error_response.hpp"
#include "proxy/answers.hpp"
#include "proxy/relay/body_usage.hpp"
#include "proxy/relay/event_scan.hpp"
#include "proxy/outcomes.hpp"
#include "proxy/pipeline.hpp"
#include "proxy/relay/relay.hpp"
#include "proxy/upstream_request.hpp"

namespace sluice::proxy {

namespace json = boost::json;

namespace {

constexpr std::string_view attempts_header = "x-sluice-attempts";
constexpr std::string_view upstream_header = "x-sluice-upstream";

// A non-2xx upstream body becomes the client's error body: kept when already OpenAI-shaped.
std::string upstream_error_body(unsigned status, const std::string& body) {
  unsigned char stack[4096];
  json::monotonic_resource mr(stack, sizeof stack);
  error_code ec;
  json::value v = json::parse(body, ec, &mr);
  if (!ec && v.is_object() && v.get_object().contains("error") && v.get_object().at("error").is_object()) return body;
  error e = error::make(errc::upstream_status, "upstream returned HTTP " + std::to_string(status));
  e.upstream_status = static_cast<int>(status);
  return http::error_body(e);
}

// What the upstream reported: the request's tokens (the key's tpm), and its pacer's budget settled.
void charge_usage(request_context& ctx, exchange& x, const reported_usage& used) {
  ctx.end.tokens_in = used.in;
  ctx.end.tokens_out = used.out;
  if (x.lease && x.lease.upstream().pace->has_token_budget()) x.lease.settle(used.in + used.out, runtime::steady::now());
}

// The stream's head: the upstream's status and passed-back headers, ours, the attempts made.
task<bool> write_stream_head(request_context& ctx, exchange& x) {
  bhttp::response<bhttp::empty_body> head{static_cast<bhttp::status>(x.status), ctx.version};
  head.set(bhttp::field::content_type, "text/event-stream");
  head.set(bhttp::field::cache_control, "no-cache");
  head.set("x-accel-buffering", "no");
  stamp(head, ctx);
  head.set(attempts_header, std::to_string(x.attempts));
  head.set(upstream_header, x.lease.upstream().spec.name);
  for (const auto& f : x.response->head())
    if (passback(f.name_string())) head.set(f.name_string(), f.value());
  head.keep_alive(ctx.keep_alive);
  if (x.response->has_buffered_body()) {
    // The first events came with the upstream's head: the head goes out with them, in one write
    // (the relay writes a held head alone before it waits for more).
    ctx.conn->hold_head(head);
    co_return true;
  }
  auto w = co_await ctx.conn->write_head(head);
  co_return w.has_value();
}

}  // namespace

task<void> send_failure(request_context& ctx, exchange& x) {
  bhttp::fields extra = std::move(x.failure_headers);
  if (x.attempts) extra.set(attempts_header, std::to_string(x.attempts));
  ctx.end.attempts = x.attempts;
  co_await send_error(ctx, *x.failure, &extra);
}

task<void> pipeline::answer_whole(request_context& ctx, exchange& x, upstream_call& call) {
  unsigned status = x.status;
  std::string body = std::move(*x.body);
  auto& end = ctx.end;
  end.attempts = x.attempts;
  if (x.lease) end.upstream = x.lease.upstream().spec.name;
  if (status / 100 == 2) {
    if (cfg_.svc.spans && ctx.trace.sampled()) ctx.trace.identify(body);
    if (auto used = usage_of(body)) charge_usage(ctx, x, *used);
  }
  std::string ctype(x.response->head()[bhttp::field::content_type]);
  whole_check output_check;  // structured outputs: check a whole 2xx answer (retry: ask again)
  if (ctx.contract && status / 100 == 2) {
    output_check = co_await check_whole_answer(ctx, *ctx.contract, call, status, body);
    if (output_check.client_gone) {
      end.outcome = obs::outcome::cancelled;
      end.reason = to_string(cancel_reason::client_gone);
      co_return;
    }
    if (output_check.failure) {
      bhttp::fields extra;
      for (const auto& [k, v] : output_check.headers) extra.set(k, v);
      extra.set(attempts_header, std::to_string(x.attempts));
      co_return co_await send_error(ctx, *output_check.failure, &extra);
    }
  }
  http::response res{static_cast<bhttp::status>(status), ctx.version};
  res.set(bhttp::field::content_type, ctype.empty() ? std::string_view("application/json") : std::string_view(ctype));
  stamp(res, ctx);
  res.set(attempts_header, std::to_string(x.attempts));
  if (!end.upstream.empty()) res.set(upstream_header, end.upstream);
  for (const auto& f : x.response->head())
    if (passback(f.name_string())) res.set(f.name_string(), f.value());
  for (const auto& [k, v] : output_check.headers) res.set(k, v);
  if (status / 100 != 2) {
    // An upstream may quote (pieces of) the key it was sent: redacted, with a mask that does not
    // show the key's length.
    res.body() = cfg_.svc.secrets.redact(upstream_error_body(status, body));
    res.set(bhttp::field::content_type, "application/json");
    // The upstream's own verdict on a retry stands; else one by its status.
    const auto theirs = x.response->head()[should_retry_header];
    if (theirs == "true" || theirs == "false") res.set(should_retry_header, theirs);
    else res.set(should_retry_header, should_retry_text(should_retry_value(status, nullptr)));
    end.reason = to_string(errc::upstream_status);
  } else {
    res.body() = std::move(body);
  }
  res.keep_alive(ctx.keep_alive);
  res.prepare_payload();
  end.kind = end_kind::completed;
  end.status = static_cast<int>(status);
  end.outcome = outcome_of_status(status);
  end.bytes_out = res.body().size();
  auto w = co_await ctx.conn->write(res);
  end.written = w.has_value();
}


// Frames on the way to the relay live as long as the stream: the head is written by its own
// coroutine, the accounting after it is a plain function, so this frame holds little but the relay.
task<void> pipeline::relay_stream(request_context& ctx, exchange& x, bool usage_injected) {
  sse_relay relay(*ctx.conn, *x.response, ctx.cancel, relay_, ctx.start);
  if (watchdog_) relay.watch(*watchdog_);
  relay.set_deadline(ctx.start + cfg_.router.settings().request_timeout);
  if (usage_injected) relay.strip_usage_chunk();
  if (cfg_.svc.spans && ctx.trace.sampled()) relay.identify_into(ctx.trace);
  std::unique_ptr<stream_check> output_check;  // structured outputs, fed by the relay's own parse
  if (ctx.contract && ctx.contract->checks_streams()) {
    output_check = std::make_unique<stream_check>(*ctx.contract);
    relay.set_output_check(output_check.get());
  }
  if (ctx.which == api::responses) relay.end_on_response_completed();
  const bool head_written = co_await write_stream_head(ctx, x);
  if (head_written) {
    x.response->forget_head();  // the client has its head: the upstream's is not read again
    co_await relay.run();
  } else {
    relay.client_left_before_head();
  }
  account_stream(ctx, x, relay.result());
}

void pipeline::account_stream(request_context& ctx, exchange& x, const relay_result& result) {
  // The upstream's health and budget: a stream that broke on the upstream's side counts against it.
  const auto now = runtime::steady::now();
  if (result.completed) {
    x.lease.succeeded();
  } else if (result.failure && !result.client_gone) {
    auto c = result.failure->code;
    // A model's answer that does not match the client's schema says nothing of the upstream's
    // health: the upstream delivered; sluice cut the stream.
    if (result.failure->api_code == "schema_violation") x.lease.succeeded();
    else if (c == errc::upstream_timeout || c == errc::upstream_protocol || c == errc::upstream_connect) x.lease.failed(now);
  }
  if (result.prompt_tokens + result.completion_tokens > 0)
    x.lease.settle(result.prompt_tokens + result.completion_tokens, now);
  if (result.usage_stripped) cfg_.svc.upstreams.usage_stripped();

  auto& end = ctx.end;
  end.kind = end_kind::stream;
  end.status = static_cast<int>(x.status);
  end.upstream = x.lease.upstream().spec.name;
  end.attempts = x.attempts;
  if (result.completed) {
    end.outcome = obs::outcome::ok;
  } else if (result.client_gone) {
    end.outcome = obs::outcome::cancelled;
    end.reason = to_string(cancel_reason::client_gone);
  } else if (result.failure) {
    end.outcome = outcome_of_stream_failure(*result.failure);
    end.reason = reason_of(*result.failure);
  } else {
    end.outcome = obs::outcome::upstream_error;
  }
  end.first_event = result.first_event;
  end.relay_overhead_seconds = result.relay_overhead_seconds;
  end.tokens_in = result.prompt_tokens;
  // Without a usage report, content events stand in for completion tokens (one token each).
  end.tokens_out = result.completion_tokens ? result.completion_tokens : result.content_events;
  end.bytes_out = result.bytes_out;
  end.written = result.completed && !result.client_gone && !result.failure;
}

namespace {
// What of a streamed route's answer head describes its body, passed on as it is.
constexpr std::string_view body_headers[] = {"content-type", "content-disposition", "content-language",
                                             "content-encoding", "cache-control", "etag", "last-modified"};
constexpr std::size_t body_piece_bytes = 64 * 1024;  // a streamed answer's one buffer

// A streamed route's answer head: the upstream's status and the headers that describe its body,
// the gateway's own stamps, and the upstream's length when it sent one (a download's progress has
// its total).
bhttp::response<bhttp::empty_body> body_answer_head(const request_context& ctx, const exchange& x) {
  bhttp::response<bhttp::empty_body> head{static_cast<bhttp::status>(x.status), ctx.version};
  for (auto name : body_headers)
    if (auto v = x.response->head()[name]; !v.empty()) head.set(name, v);
  stamp(head, ctx);
  head.set(attempts_header, std::to_string(x.attempts));
  head.set(upstream_header, x.lease.upstream().spec.name);
  for (const auto& f : x.response->head())
    if (passback(f.name_string())) head.set(f.name_string(), f.value());
  head.keep_alive(ctx.keep_alive);
  if (const auto length = x.response->content_length()) head.content_length(*length);
  return head;
}

// How that answer's body is framed: by the length when the head has one, chunked otherwise (an SSE
// answer, a body the upstream ended by closing): a body delimited by the close would hold a
// keep-alive client until the idle timeout. Each call returns the downstream's own task.
struct body_framing {
  http::downstream& to;
  bool sized;
  task<result<void>> head(bhttp::response<bhttp::empty_body>& h) { return sized ? to.write_sized_head(h) : to.write_head(h); }
  task<result<void>> piece(std::string_view bytes) { return sized ? to.write_piece(bytes) : to.write_chunk(bytes); }
  task<result<void>> finish() { return sized ? to.finish_pieces() : to.finish_chunks(); }
};
}  // namespace

task<void> pipeline::relay_body(request_context& ctx, exchange& x) {
  auto& end = ctx.end;
  end.status = static_cast<int>(x.status);
  end.upstream = x.lease.upstream().spec.name;
  end.attempts = x.attempts;
  auto head = body_answer_head(ctx, x);
  body_framing framing{*ctx.conn, head.has_content_length()};
  // One piece at a time: read from the upstream, written to the client, then the next read. A slow
  // client holds the upstream back (TCP's window), and memory stays one piece whatever the size.
  const auto piece = std::make_unique<char[]>(body_piece_bytes);
  std::optional<sse_usage_watch> usage;  // an SSE answer (a streamed transcription) may report usage
  if (x.response->head()[bhttp::field::content_type].starts_with("text/event-stream"))
    usage.emplace(static_cast<std::size_t>(cfg_.proxy.stream_buffer));
  std::optional<error> failure;
  auto head_written = co_await framing.head(head);
  bool client_gone = !head_written;
  while (!client_gone) {
    auto n = co_await x.response->read_some(piece.get(), body_piece_bytes);
    if (!n) {
      if (n.err().code == errc::cancelled || ctx.cancel.cancelled()) client_gone = true;
      else failure = std::move(n).err();
      break;
    }
    if (*n == 0) {
      auto ended = co_await framing.finish();
      end.written = ended.has_value();
      client_gone = !end.written;
      break;
    }
    if (usage) usage->feed(std::string_view(piece.get(), *n));
    const std::string_view bytes(piece.get(), *n);
    auto written = co_await framing.piece(bytes);
    client_gone = !written;
    if (!client_gone) end.bytes_out += *n;
  }
  if (usage && usage->usage()) charge_usage(ctx, x, *usage->usage());
  if (end.written) {
    x.lease.succeeded();
    end.outcome = outcome_of_status(x.status);
  } else if (client_gone) {
    x.response->abort();  // the upstream stops at once
    end.outcome = obs::outcome::cancelled;
    end.reason = to_string(cancel_reason::client_gone);
  } else {
    // Cut short upstream: the client's body ends without its last chunk (never a silent success).
    x.lease.failed(runtime::steady::now());
    end.outcome = outcome_of_stream_failure(*failure);
    end.reason = reason_of(*failure);
    ctx.keep_alive = false;
    ctx.conn->close();
  }
}

task<void> pipeline::refuse_upload(request_context& ctx, const error& e) {
  ctx.keep_alive = false;  // the rest of the body cannot be trusted to end where a request starts
  if (e.code == errc::cancelled) {
    ctx.end.outcome = obs::outcome::cancelled;
    ctx.end.reason = to_string(cancel_reason::client_gone);
    co_return;
  }
  if (e.code == errc::payload_too_large) co_return co_await refuse(ctx, e, obs::reject_reason::upload_too_large);
  co_await send_error(ctx, e);
  ctx.end.outcome = obs::outcome::client_error;
}

}  // namespace sluice::proxy
