// Serving one completion request: status faults, delays, the SSE stream or the whole body, and the
// mid-stream faults. The response runs beside a read on the socket (watch_peer) so a client that
// leaves is noticed at once, even while the simulator is only waiting.

// GCC 12 at -O2 reports a false -Wmismatched-new-delete on Asio's awaitable frames (its class
// operator new/delete pair) once a parallel_group is inlined here.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/write.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "core/openai_duration.hpp"
#include "runtime/socket_io.hpp"
#include "sim/content.hpp"
#include "sim/messages.hpp"
#include "sim/worker.hpp"

namespace sluice::sim {
namespace {

// Stream bytes are written once this many are pending, so per-stream memory stays small even for
// long responses without delays.
constexpr std::size_t flush_bytes = 16 * 1024;
// Bytes a peer may send (a pipelined next request) while its response is running.
constexpr std::size_t max_early_bytes = 64 * 1024;

// A gauge held up for a scope: active_streams while a stream is open, completions_running while a
// completion request is being served.
struct gauge_hold {
  explicit gauge_hold(counters::counter& g) : n(g) { counters::inc(n); }
  ~gauge_hold() { counters::dec(n); }
  gauge_hold(const gauge_hold&) = delete;
  gauge_hold& operator=(const gauge_hold&) = delete;
  counters::counter& n;
};

// Everything one response needs, in the serve_completion frame; respond() and watch_peer() borrow it.
struct exchange {
  connection& c;
  const request_settings& s;
  const completion_request& req;
  bool keep_alive;
  status_fault fault;
  net::steady_timer timer;
  std::string pending;  // framed bytes not yet written (head, HTTP chunks)
  std::string event;    // one SSE event, reused
  bool stream_open = false;  // a stream that neither completed nor ended by a fault
  response_end end = response_end::peer_gone;
  std::optional<gauge_hold> gauge = {};  // active_streams, while stream_open
  const rate_decision* limits = nullptr;  // with limit-rpm/limit-tpm: this request's x-ratelimit-* figures

  // The stream ends: the gauge drops before the counter that says why moves, so a test that sees
  // the outcome also sees active_streams fall.
  void close_stream() {
    stream_open = false;
    gauge.reset();
  }
};


// GCC 12 miscompiles co_await inside conditions and short-circuit operators in some coroutine
// shapes, so results are always taken into a variable first.

using sim_clock = std::chrono::steady_clock;

// Waits until `due`; false when cancelled (the peer left or the server stops). A point already
// passed does not wait. Either way the wakeup's lateness is counted (see counters).
task<bool> wait_until(exchange& x, sim_clock::time_point due) {
  const auto now = sim_clock::now();
  if (due <= now) {
    x.c.owner.count.note_timer_wakeup(now - due);
    co_return true;
  }
  x.timer.expires_at(due);
  error_code ec;
  co_await x.timer.async_wait(ec_out(ec));
  if (!ec) x.c.owner.count.note_timer_wakeup(sim_clock::now() - due);
  co_return !ec;
}

// Waits d from now; zero never suspends (and is not a timed wait).
task<bool> pause(exchange& x, duration d) {
  if (d <= duration::zero()) co_return true;
  const bool waited = co_await wait_until(x, sim_clock::now() + d);
  co_return waited;
}

// A token's due time rounded up to the next millisecond, so that the streams due within one
// millisecond share one wakeup (thousands of streams would otherwise each cost the worker a
// wakeup and a timer re-arm).
sim_clock::time_point on_tick(sim_clock::time_point due) {
  return sim_clock::time_point(std::chrono::ceil<std::chrono::milliseconds>(due.time_since_epoch()));
}

// Waits until cancelled: the stall fault.
task<void> stall(exchange& x) {
  x.timer.expires_at(net::steady_timer::time_point::max());
  error_code ec;
  co_await x.timer.async_wait(ec_out(ec));
}

// Holds while the engine is paused; false when the peer left (or the server stops) meanwhile.
task<bool> hold_while_paused(exchange& x) {
  while (x.c.owner.shared.control.paused()) {
    error_code ec;
    co_await x.c.owner.held_streams.async_wait(ec_out(ec));
    auto state = co_await net::this_coro::cancellation_state;
    if (state.cancelled() != net::cancellation_type::none) co_return false;
  }
  co_return true;
}

void set_ratelimit_headers(http::response<http::string_body>& res, const rate_decision* d, api kind) {
  if (!d) return;
  for (const auto& [name, value] : ratelimit_headers(*d, kind)) res.set(name, value);
}

void reset_connection(exchange& x) {
  error_code ec;
  x.c.socket.set_option(net::socket_base::linger(true, 0), ec);  // close() now sends RST
  x.c.socket.close(ec);
  x.end = response_end::close;
}

void frame_event(exchange& x) {
  if (x.c.owner.opts.spaced_json) x.event = spaced_json(x.event, true);
  char head[24];
  int n = std::snprintf(head, sizeof head, "%zx\r\n", x.event.size());
  x.pending.append(head, static_cast<std::size_t>(n));
  x.pending += x.event;
  x.pending += "\r\n";
  x.event.clear();
}

task<bool> flush(exchange& x) {
  if (x.pending.empty()) co_return true;
  // Offered to the socket first: a client that reads has room for a token, and the write then
  // costs no trip through the event loop. The rest (a full socket) goes through the async write.
  const std::size_t sent = runtime::send_now(x.c.socket, x.pending, net::const_buffer());
  error_code ec;
  if (sent < x.pending.size())
    co_await net::async_write(x.c.socket, net::buffer(x.pending.data() + sent, x.pending.size() - sent), ec_out(ec));
  x.pending.clear();  // keeps the capacity: one small buffer per stream, reused
  co_return !ec;
}

// The status faults. The 5xx fault is a 500, or on the Messages API Anthropic's 529 overloaded_error.
task<void> respond_status(exchange& x) {
  auto& w = x.c.owner;
  counters::inc(w.count.faults_injected);
  http::response<http::string_body> res;
  const api kind = x.req.kind;
  unsigned status = x.fault == status_fault::forced ? static_cast<unsigned>(x.s.status)
                    : x.fault == status_fault::http_429 ? 429u
                    : kind == api::messages             ? 529u
                                                        : 500u;
  if (status == 429) {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(x.s.retry_after).count();
    auto reset = format_openai_duration(x.s.retry_after);
    res = make_api_error(kind, 429, x.keep_alive,
                         "Rate limit reached for requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in " +
                             reset + ".",
                         "requests", {}, "rate_limit_exceeded");
    res.set(http::field::retry_after, std::to_string((ms + 999) / 1000));
    res.set("retry-after-ms", std::to_string(ms));
    res.set("x-ratelimit-limit-requests", "500");
    res.set("x-ratelimit-remaining-requests", "0");
    res.set("x-ratelimit-reset-requests", reset);
    res.set("x-ratelimit-limit-tokens", "200000");
    res.set("x-ratelimit-remaining-tokens", "0");
    res.set("x-ratelimit-reset-tokens", reset);
    set_ratelimit_headers(res, x.limits, kind);  // with real limits on, their figures replace the fixed ones
  } else if (status >= 500) {
    res = make_api_error(kind, status, x.keep_alive,
                         kind != api::messages ? "The server had an error while processing your request. Sorry about that!"
                         : status == 529       ? "Overloaded"
                                               : "Internal server error",
                         "server_error");
  } else {
    res = make_api_error(kind, status, x.keep_alive, "Simulated error status " + std::to_string(status),
                         error_type_for_status(static_cast<int>(status)));
  }
  if (status != 429) set_ratelimit_headers(res, x.limits, kind);
  x.end = co_await write_simple(x.c, res);
}

task<void> respond_whole(exchange& x) {
  choice_set choices(x.req, x.s.tokens, x.s.token_size, x.s.content, x.s.choice_contents);
  const auto n = choices.steps();
  // A whole response arrives when its last token would have: header delay, ttft, then the gaps.
  duration wait = x.s.header_delay + x.s.ttft + (n > 1 ? x.s.token_delay * static_cast<std::int64_t>(n - 1) : duration::zero());
  const bool waited = co_await pause(x, wait);
  if (!waited) co_return;
  auto fires = [n](const std::optional<std::uint64_t>& k) { return k && *k <= n; };
  auto& w = x.c.owner;
  if (fires(x.s.stall_after) || fires(x.s.reset_after) || fires(x.s.malformed_after))
    counters::inc(w.count.faults_injected);
  if (fires(x.s.reset_after)) {
    reset_connection(x);
    co_return;
  }
  if (fires(x.s.stall_after)) {
    co_await stall(x);
    co_return;
  }
  const std::string& id = choices.front().id();
  http::response<http::string_body> res{http::status::ok, 11};
  res.set(http::field::content_type, "application/json");
  res.set("x-request-id", "req_" + id.substr(id.find('-') + 1));
  res.keep_alive(x.keep_alive);
  res.body() = choices.body();
  if (x.c.owner.opts.spaced_json) res.body() = spaced_json(res.body(), false);
  if (fires(x.s.malformed_after)) res.body().resize(res.body().size() / 2);  // cut JSON
  set_ratelimit_headers(res, x.limits, x.req.kind);
  counters::inc(w.count.completions_succeeded);  // before the write, like every counter a client may check
  x.end = co_await write_simple(x.c, res);
}

// The head of a stream's response, framed into x.pending.
void frame_stream_head(exchange& x, const std::string& id) {
  x.pending = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nCache-Control: no-cache\r\n";
  x.pending += "x-request-id: req_" + id.substr(id.find('-') + 1) + "\r\n";
  if (x.limits)
    for (const auto& [name, value] : ratelimit_headers(*x.limits, x.req.kind))
      x.pending.append(name).append(": ").append(value).append("\r\n");
  x.pending += x.keep_alive ? "Transfer-Encoding: chunked\r\n\r\n" : "Connection: close\r\nTransfer-Encoding: chunked\r\n\r\n";
}

// The reset or stall fault due after i tokens: what is framed goes out first, then the stream ends.
task<void> end_stream_by_fault(exchange& x, std::uint64_t i) {
  counters::inc(x.c.owner.count.faults_injected);
  const bool ok = co_await flush(x);
  if (!ok) co_return;
  if (x.s.reset_after == i) {
    x.close_stream();
    reset_connection(x);
  } else {
    co_await stall(x);
  }
}

// The Messages API's in-band error event ends its stream, as Anthropic's do: after it, the last
// HTTP chunk (the body ends cleanly; the stream counts as ended by a fault).
task<void> end_stream_after_error(exchange& x) {
  x.pending += "0\r\n\r\n";
  x.close_stream();
  const bool ok = co_await flush(x);
  x.end = !ok ? response_end::peer_gone : x.keep_alive ? response_end::done : response_end::close;
}

// The stream's events from the first token to the last finish chunk. False: the stream ended
// before (a fault, or the peer left).
task<bool> stream_steps(exchange& x, choice_set& choices) {
  // Tokens follow a fixed schedule from the first one (token i is due i token delays after it), so
  // a late wakeup delays one token, not every token after it: streams that a busy moment bunched
  // together spread out again instead of staying in step.
  auto due = sim_clock::now();

  if (choices.has_role_chunk()) {
    choices.append_role_chunks(x.event);
    frame_event(x);
  }
  const auto n = choices.steps();
  for (std::uint64_t i = 0;; ++i) {
    // Faults fire after i tokens, so K == n hits just before the (last) finish chunk.
    if (x.s.malformed_after == i) {
      counters::inc(x.c.owner.count.faults_injected);
      choices.front().append_malformed_event(x.event);
      frame_event(x);
      if (x.req.kind == api::messages) {
        co_await end_stream_after_error(x);
        co_return false;
      }
    }
    if (x.s.reset_after == i || x.s.stall_after == i) {
      co_await end_stream_by_fault(x, i);
      co_return false;
    }
    bool ok = true;
    if (i > 0 && i < n && x.s.token_delay > duration::zero()) {
      ok = co_await flush(x);
      if (!ok) co_return false;
      due += x.s.token_delay;
      ok = co_await wait_until(x, on_tick(due));
      if (!ok) co_return false;
    }
    // Step i: each choice's token i, or its finish chunk once its tokens ran out.
    choices.append_step(x.event, i);
    frame_event(x);
    if (i == n) co_return true;
    if (x.pending.size() >= flush_bytes) {
      ok = co_await flush(x);
      if (!ok) co_return false;
    }
  }
}

// After the last step: the usage chunk, [DONE] and the last HTTP chunk.
task<void> finish_stream(exchange& x, choice_set& choices) {
  auto& w = x.c.owner;
  if (x.req.include_usage) {
    choices.append_usage_chunk(x.event);
    frame_event(x);
  }
  if (choices.has_done_marker()) {  // the Responses API ends with response.completed, no [DONE]
    generator::append_done(x.event);
    frame_event(x);
  }
  x.pending += "0\r\n\r\n";
  // Counted before the last write so a client that has read [DONE] always sees it in the stats.
  x.close_stream();
  counters::inc(w.count.streams_completed);
  counters::inc(w.count.completions_succeeded);
  const bool ok = co_await flush(x);
  x.end = !ok ? response_end::peer_gone : x.keep_alive ? response_end::done : response_end::close;
}

task<void> respond_stream(exchange& x) {
  choice_set choices(x.req, x.s.tokens, x.s.token_size, x.s.content, x.s.choice_contents);
  bool ok = co_await pause(x, x.s.header_delay);
  if (!ok) co_return;
  frame_stream_head(x, choices.front().id());
  x.c.owner.count.count_status(200);
  // Headers go out before the first token, as a real upstream sends them.
  ok = co_await flush(x);
  if (!ok) co_return;
  ok = co_await hold_while_paused(x);
  if (!ok) co_return;
  ok = co_await pause(x, x.s.ttft);
  if (!ok) co_return;
  ok = co_await stream_steps(x, choices);
  if (!ok) co_return;
  co_await finish_stream(x, choices);
}

task<void> respond(exchange& x) {
  if (x.fault != status_fault::none) {
    const bool waited = co_await pause(x, x.s.header_delay);
    if (waited) co_await respond_status(x);
  } else if (x.req.stream) {
    co_await respond_stream(x);
  } else {
    co_await respond_whole(x);
  }
}

// Reads while the response runs: EOF or an error means the peer is gone. Bytes that arrive (a
// pipelined request) are kept for the next read of the session.
task<void> watch_peer(connection& c) {
  std::array<char, 256> scratch;
  for (;;) {
    error_code ec;
    std::size_t n = co_await c.socket.async_read_some(net::buffer(scratch), ec_out(ec));
    if (n > 0) {
      if (c.buffer.size() + n > max_early_bytes) co_return;  // a peer flooding us mid-response
      net::buffer_copy(c.buffer.prepare(n), net::buffer(scratch, n));
      c.buffer.commit(n);
    }
    if (ec) co_return;
    auto state = co_await net::this_coro::cancellation_state;
    if (state.cancelled() != net::cancellation_type::none) co_return;
  }
}

std::string_view header(const http::request<http::string_body>& req, std::string_view name) {
  auto it = req.find(name);
  return it == req.end() ? std::string_view{} : std::string_view(it->value());
}

// The 429 of limit-rpm / limit-tpm: OpenAI's body (Anthropic's on /v1/messages), when to retry, and
// the limits' figures.
http::response<http::string_body> rate_limited(api kind, const rate_decision& d, bool keep_alive) {
  auto res = make_api_error(kind, 429, keep_alive, rate_limit_message(d), d.exceeded, {}, "rate_limit_exceeded");
  res.set(http::field::retry_after, std::to_string(ceil_seconds(d.retry_after)));
  res.set("retry-after-ms", std::to_string(ceil_ms(d.retry_after)));
  set_ratelimit_headers(res, &d, kind);
  return res;
}

// The simulator's request headers (x-sim-*), as overrides of its options.
header_overrides sim_headers(const http::request<http::string_body>& req) {
  return {header(req, "x-sim-tokens"),       header(req, "x-sim-ttft"),
          header(req, "x-sim-token-delay"),  header(req, "x-sim-token-size"),
          header(req, "x-sim-header-delay"), header(req, "x-sim-retry-after"),
          header(req, "x-sim-fault"),        header(req, "x-sim-fault-after"),
          header(req, "x-sim-status"),       header(req, "x-sim-content"),
          header(req, "x-sim-content-b64"),  header(req, "x-sim-tool-call")};
}

// A stream opens: counted, and held in active_streams (and its peak) until close_stream.
void open_stream(exchange& x) {
  auto& w = x.c.owner;
  counters::inc(w.count.streams_started);
  x.gauge.emplace(w.count.active_streams);
  if (const auto open = w.count.active_streams.load(std::memory_order_relaxed);
      open > w.count.peak_active_streams.load(std::memory_order_relaxed))
    w.count.peak_active_streams.store(open, std::memory_order_relaxed);
  x.stream_open = true;
}

// The response and the peer watcher run side by side; whichever ends first cancels the other
// (a finished response stops the watch; a departed peer cuts the response, even mid-wait).
// They borrow `x` and its connection by reference, unlike detached coroutines: the group is
// awaited right here and completes only after both have finished, so the caller's frame, which
// holds `x`, outlives them.
task<void> respond_beside_watch(exchange& x) {
  auto ex = x.c.owner.ctx.get_executor();
  // Named first, so no temporary of this full-expression lives across the suspension (GCC 12
  // mishandles coroutine temporaries there).
  auto group = net::experimental::make_parallel_group(net::co_spawn(ex, respond(x), net::deferred),
                                                      net::co_spawn(ex, watch_peer(x.c), net::deferred));
  auto [order, respond_error, watch_error] = co_await group.async_wait(net::experimental::wait_for_one(), use_task);
  if (order[0] == 0 && respond_error) std::rethrow_exception(respond_error);  // a bug: reported by the session
  (void)watch_error;  // the watcher ends by cancellation or by the peer leaving; neither is an error
  if (order[0] == 1) x.end = response_end::peer_gone;  // the watcher won: the response was cut
}

}  // namespace

task<response_end> serve_completion(connection& c, api kind, const http::request<http::string_body>& req,
                                    std::string_view deployment) {
  auto& w = c.owner;
  const bool keep = req.keep_alive();
  counters::inc(w.count.completion_requests);
  counters::inc(w.count.completion_requests_by_api[static_cast<std::size_t>(kind)]);
  const gauge_hold running(w.count.completions_running);
  // The next script entry applies on top of the request's own headers, as if it were those headers.
  const std::optional<script_entry> entry = w.shared.control.pop();
  header_overrides h = sim_headers(req);
  if (entry) entry->apply(h);
  auto settings = resolve_settings(w.opts, h);
  if (!settings) {
    auto res = make_api_error(kind, 400, keep, settings.err().message, "invalid_request_error");
    co_return co_await write_simple(c, res);
  }
  auto creq = kind == api::messages ? parse_messages(req.body(), w.opts.seed)
                                    : parse_completion(kind, req.body(), w.opts.seed, deployment);
  if (!creq) {
    auto res = make_api_error(kind, 400, keep, creq.err().message, "invalid_request_error", creq.err().param);
    co_return co_await write_simple(c, res);
  }
  if (settings->tool_call && kind != api::completion) creq->tool_call = *settings->tool_call;

  // Rate limits come first, as at a real provider: a refused request reaches no fault and no model.
  std::optional<rate_decision> limits;
  if (w.shared.limiter) {
    limits = w.shared.limiter->take(token_cost(*creq, *settings), std::chrono::steady_clock::now());
    if (!limits->allowed) {
      counters::inc(w.count.rate_limited);
      auto res = rate_limited(kind, *limits, keep);
      co_return co_await write_simple(c, res);
    }
  }

  exchange x{c, *settings, *creq, keep, pick_status_fault(*settings, w.opts, w.next_uniform()),
             net::steady_timer(w.ctx), {}, {}, false, response_end::peer_gone, {}};
  if (limits) x.limits = &*limits;
  if (x.fault == status_fault::none && creq->stream) open_stream(x);
  co_await respond_beside_watch(x);
  if (x.stream_open && x.end == response_end::peer_gone) {
    x.close_stream();
    counters::inc(w.count.streams_aborted);
  }
  co_return x.end;
}

}  // namespace sluice::sim
