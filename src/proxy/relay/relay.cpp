#include "proxy/relay/relay.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>

#include "http/error_response.hpp"
#include "proxy/relay/event_scan.hpp"
#include "proxy/relay/in_band.hpp"

namespace sluice::proxy {

namespace {
// How far a stream whose reads fill the buffer grows it (and the upstream read buffer): enough to
// move dozens of events per system call, small enough that thousands of fast streams stay cheap.
constexpr std::size_t fast_stream_buffer = 16 * 1024;
}  // namespace

using namespace boost::asio::experimental::awaitable_operators;
namespace json = boost::json;

sse_relay::sse_relay(http::downstream& client, upstream::response& up, request_cancel& cancel,
                     const relay_context& ctx, runtime::steady::time_point request_start)
    : client_(client),
      up_(up),
      cancel_(cancel),
      ctx_(ctx),
      request_start_(request_start),
      active_buffer_(ctx.streams.stream_active_buffers()),
      handle_(ctx.live_streams.add()),
      buf_(ctx.buffer_initial, ctx.buffer_max),
      parser_(ctx.buffer_max) {}

sse_relay::~sse_relay() {
  // The watchdog closed the client for a write stall (http::connection::on_tick); counted here,
  // where the metrics are, once per stream.
  if (client_.stalled()) ctx_.streams.write_stalls_total().Increment();
  if (accounted_bytes_) ctx_.streams.stream_buffered_bytes().Decrement(static_cast<double>(accounted_bytes_));
}

void sse_relay::account_buffer() noexcept {
  // The stream's buffers: the relay's and the upstream connection's read buffer (trimmed first:
  // the head read's 4 KiB are not kept for a slow stream's life).
  up_.trim();
  std::uint64_t now_bytes = buf_.capacity() + up_.buffer_capacity();
  if (now_bytes == accounted_bytes_) return;
  auto& g = ctx_.streams.stream_buffered_bytes();
  if (now_bytes > accounted_bytes_) g.Increment(static_cast<double>(now_bytes - accounted_bytes_));
  else g.Decrement(static_cast<double>(accounted_bytes_ - now_bytes));
  accounted_bytes_ = now_bytes;
  handle_.set_buffered(now_bytes);
}

void sse_relay::watch(runtime::watchdog& w) {
  w.add(*this);
  watched_ = true;
  up_.watch_idle_externally();
}

void sse_relay::on_tick(runtime::steady::time_point now) {
  if (cancel_.cancelled()) return;
  cancel_reason why = cancel_reason::none;
  if (watched_ && reading_since_ != runtime::steady::time_point{} && now - reading_since_ > up_.idle_timeout())
    why = cancel_reason::upstream_idle;
  else if (now >= deadline_) why = cancel_reason::deadline;
  else if (ctx_.drain.cutting.load(std::memory_order_relaxed)) why = cancel_reason::draining;
  else if (handle_ && handle_.reset_requested()) why = cancel_reason::memory;
  // The pump's pending read fails at once and ends the stream in-band with the reason's error.
  cancel_.cancel(why);
}

task<void> sse_relay::run() {
  // The client is watched for the whole request (http::connection::watch_peer): a client that goes
  // cancels it, which aborts the upstream, so the pump's pending read fails at once.
  co_await pump();
  res_.events = events_.events;
  res_.content_events = events_.content_events;
  res_.completion_tokens = events_.completion_tokens;
  res_.prompt_tokens = events_.prompt_tokens;
  res_.usage_stripped = events_.usage_stripped;
  if (client_.peer_gone() || cancel_.client_gone()) res_.client_gone = true;
  res_.bytes_out = client_.bytes_written();
  count_bytes_out();
}

void sse_relay::client_left_before_head() noexcept {
  up_.abort();
  res_.client_gone = true;
}

void sse_relay::count_bytes_out() noexcept {
  const std::uint64_t written = client_.bytes_written();
  if (written > counted_out_) ctx_.streams.stream_bytes_total(obs::byte_direction::downstream).add(written - counted_out_);
  counted_out_ = written;
}

bool sse_relay::on_event(const sse::event_view& ev) {
  if (ev.data == "[DONE]") {
    bool verdict_here = false;
    if (check_) {  // structured outputs: the document must be complete; the verdict goes before [DONE]
      if (auto e = check_->on_done()) {
        ending_ = std::move(*e);
        return false;
      }
      verdict_here = check_->emits_event() && !verdict_sent_;
    }
    events_.on_done(ev.end, verdict_here);
    return true;
  }
  event_facts facts;
  if (!scan_event(ev.data, facts)) {
    ending_ = error::make(errc::upstream_protocol, "upstream sent a malformed stream event (not JSON)");
    return false;
  }
  if (identity_) {
    identity_->identify(ev.data);
    identity_ = nullptr;
  }
  if (check_) {  // structured outputs: the check reads the values, so this event is parsed too
    unsigned char stack[4096];
    json::monotonic_resource mr(stack, sizeof stack);
    error_code ec;
    json::value v = json::parse(ev.data, ec, &mr);
    if (ec || !v.is_object()) {  // scan_event accepted it, so this is only an allocation failure
      ending_ = error::make(errc::internal, "could not parse a stream event for the schema check");
      return false;
    }
    if (auto e = check_->on_event(v.get_object())) {
      ending_ = std::move(*e);
      return false;
    }
  }
  if (facts.has_error || facts.type == event_facts::type_kind::failed || facts.type == event_facts::type_kind::error) {
    // The upstream's own error event goes to the client: without the gateway's keys in it. Its
    // bytes start after the chunk's last good event, or at the buffer's start when it is the
    // chunk's first (the buffer then holds its beginning).
    const std::size_t from = events_.good_end() > 0 ? events_.chunk_start() + events_.good_end() : 0;
    redact_event(from, events_.chunk_start() + ev.end);
  }
  if (events_.on_data(facts, ev.end)) {
    // Every event of one read arrived together: they share the read's time (one clock read per
    // read, not per event).
    const auto now = read_at_;
    auto& m = ctx_.streams;
    if (res_.first_event == runtime::steady::time_point{}) {
      res_.first_event = now;
      m.time_to_first_token_seconds().observe(now - request_start_);
    } else {
      m.inter_token_seconds().observe(now - last_content_);
    }
    last_content_ = now;
  }
  return true;
}

task<void> sse_relay::fail_in_band() {
  // An in-band error event, then a clean end of the chunked body; never [DONE]. The Responses API
  // ends a broken stream with an `error` event whose sequence_number continues the upstream's.
  std::string event = in_band_error(*ending_, events_.ends_on_response_completed(), events_.last_sequence_number + 1);
  res_.failure = std::move(*ending_);
  ending_.reset();
  auto w = co_await client_.write_chunk(event);
  if (w) w = co_await client_.finish_chunks();
  if (!w) res_.client_gone = true;
}

task<void> sse_relay::pump() {
  try {
    co_await pump_events();
  } catch (const std::exception& ex) {
    // A bug, not an I/O error: end this stream (the session reports nothing more), never hang it.
    res_.failure = error::make(errc::internal, std::string("internal error in the relay: ") + ex.what());
    up_.abort();
    client_.close();
  }
}

// The small coroutines below keep the frame of pump_events (alive for the whole stream, one per
// open stream) small: GCC gives every temporary of every co_await expression its own slot in the
// frame, so the loop itself awaits only what returns a bool, an enum or an error code.

bool sse_relay::read_now(std::size_t& n, bool& got) {
  auto r = up_.try_read(buf_.free_data(), buf_.free_size());
  if (!r) return false;
  got = took_read(std::move(*r), n);
  return true;
}

bool sse_relay::read_done(const error_code& ec, bool eof, std::size_t& n, bool& got) {
  auto failure = up_.read_failure(ec, eof);
  if (!failure) return false;  // read_now() again: bytes came, or the read was spurious
  got = took_read(std::move(*failure), n);
  return true;
}

task<sse_relay::head_step> sse_relay::send_head_first(std::size_t& n) {
  // The head waits only for events already in memory: when the buffered bytes hold none, the
  // client gets the head now, before the read that waits for the upstream.
  auto got = up_.read_buffered(buf_.free_data(), buf_.free_size());
  if (got && *got > 0) {
    n = *got;
    co_return head_step::buffered;
  }
  auto w = co_await client_.flush_head();
  if (!w) {
    res_.client_gone = true;
    co_return head_step::stop;
  }
  if (!got) {
    ending_ = std::move(got).err();
    co_return head_step::stop;
  }
  co_return head_step::read;
}

bool sse_relay::took_read(sluice::result<std::size_t> r, std::size_t& n) {
  reading_since_ = {};
  if (client_.peer_gone()) res_.client_gone = true;  // the read failed (or raced) because of it
  if (!r) {
    // Cancelled by the gateway (not the client): that reason's error, not the abort's.
    if (cancel_.cancelled() && !cancel_.client_gone()) ending_ = cancel_.ending();
    else ending_ = std::move(r).err();
    return false;
  }
  n = *r;
  if (n) ctx_.streams.stream_bytes_total(obs::byte_direction::upstream).add(n);
  return true;
}

void sse_relay::redact_event(std::size_t from, std::size_t to) {
  if (ctx_.secrets.empty()) return;
  std::size_t masked = 0;
  std::string redacted = ctx_.secrets.redact(buf_.view(from, to - from), &masked);
  if (masked == 0) return;
  // Masked in place too, for any path that sends the buffer's bytes as they are; the write sends
  // the redacted text instead, whose fixed mask does not show the key's length.
  ctx_.secrets.scrub(buf_.mutable_data() + from, to - from);
  if (events_.redact(from, to)) redacted_event_ = std::move(redacted);
}

task<bool> sse_relay::put(std::size_t from, std::size_t n) {
  auto w = co_await client_.write_chunk(buf_.view(from, n));
  co_return w.has_value();
}

bool sse_relay::ends_with_this_write(std::size_t upto) const {
  // Only the plain case: nothing left to splice in or drop, nothing after the events, and the
  // upstream body already complete; everything else takes the general path.
  return events_.saw_end() && !events_.saw_error_event() && check_ == nullptr && events_.plain_write() &&
         upto == buf_.size() &&
         up_.done();
}

task<bool> sse_relay::finish_with(std::size_t upto) {
  auto w = co_await client_.write_last_chunk(buf_.view(0, upto));
  buf_.consume(upto);
  co_return w.has_value();
}

task<bool> sse_relay::finish_body() {
  auto w = co_await client_.finish_chunks();
  co_return w.has_value();
}

task<void> sse_relay::pump_events() {
  while (true) {
    if (buf_.free_size() == 0) {  // cannot happen: the parser's event bound equals the buffer bound
      ending_ = error::make(errc::upstream_protocol, "stream buffer exhausted");
      break;
    }
    account_buffer();
    count_bytes_out();
    const std::size_t room = buf_.free_size();
    std::size_t n = 0;
    head_step step = head_step::read;
    if (client_.holds_head()) step = co_await send_head_first(n);
    if (step == head_step::stop) break;  // ending_ or client_gone says why
    bool got = true;
    if (step == head_step::read) {
      // up_.read_some() in its steps, awaited here: a paced stream waits on every read, and a
      // coroutine of its own would cost a frame per read, held by every waiting stream.
      reading_since_ = runtime::steady::now();
      while (!read_now(n, got)) {
        bool eof = false;
        const error_code ec = co_await up_.read_socket(eof);
        if (read_done(ec, eof, n, got)) break;
      }
    }
    if (res_.client_gone || !got) break;  // ending_ says why
    const auto handling_start = read_at_ = runtime::steady::now();
    if (n == 0) {  // upstream body complete
      co_await end_of_body();
      break;
    }
    const std::size_t start = buf_.size();
    const std::optional<std::size_t> boundary = parse_read(start, n, room);
    if (!boundary) {
      co_await forward_before_bad_event(start);
      break;
    }
    if (*boundary != sse::parser::npos) {
      std::size_t upto = start + *boundary;
      res_.relay_overhead_seconds += std::chrono::duration<double>(runtime::steady::now() - handling_start).count();
      if (ends_with_this_write(upto)) {  // [DONE] and the upstream's end came in this read
        const bool ended = co_await finish_with(upto);
        if (!ended) res_.client_gone = true;
        else res_.completed = true;
        break;
      }
      // The usual case, a socket with room, without write_events' and write_chunk's frames.
      bool sent = events_.plain_write() && client_.try_write_chunk(buf_.view(0, upto));
      if (sent) events_.take_cut();  // plain: nothing of it to apply
      else sent = co_await write_events(upto);
      if (!sent) {
        res_.client_gone = true;
        up_.abort();
        break;
      }
      buf_.consume(upto);
    }
  }
  if (ending_ && !res_.client_gone) co_await fail_in_band();
}

std::optional<std::size_t> sse_relay::parse_read(std::size_t start, std::size_t n, std::size_t room) {
  buf_.commit(n);
  if (n == room && room > 0) {  // a fast stream: larger reads and writes from now on
    buf_.grow_for_throughput(fast_stream_buffer);
    up_.expect_bulk(fast_stream_buffer);
  }
  events_.begin_chunk(start);
  auto boundary = parser_.feed(buf_.view(start, n), [this](const sse::event_view& ev) { return on_event(ev); });
  if (boundary && !ending_) return *boundary;
  if (!ending_) ending_ = boundary.err();
  return std::nullopt;
}

task<void> sse_relay::end_of_body() {
  if (buf_.size() > 0) {  // whitespace or a final event without its blank line: pass it on
    if (!co_await put(0, buf_.size())) {
      res_.client_gone = true;
      co_return;
    }
    buf_.consume(buf_.size());
  }
  if (!events_.saw_end() && !events_.saw_error_event()) {
    ending_ = error::make(errc::upstream_protocol, events_.ends_on_response_completed()
                                                       ? "upstream ended the stream without response.completed"
                                                       : "upstream ended the stream without [DONE]");
    co_return;
  }
  if (events_.saw_end()) {  // structured outputs: the verdict event at the end (Responses API)
    // Never a co_await inside && or ?: : GCC 12 miscompiles some of them.
    const bool sent = co_await write_verdict_event();
    if (!sent) {
      res_.client_gone = true;
      co_return;
    }
  }
  if (!co_await finish_body()) {
    res_.client_gone = true;
    co_return;
  }
  res_.completed = events_.saw_end();
  if (events_.saw_error_event() && !events_.saw_end())
    res_.failure = error::make(errc::upstream_status, "upstream sent an error event");
}

task<void> sse_relay::forward_before_bad_event(std::size_t chunk_start) {
  // Every complete good event before the bad one goes out, then (in pump_events) the error.
  if (events_.good_end() > 0) {
    const bool sent = co_await put(0, chunk_start + events_.good_end());
    if (!sent) {
      res_.client_gone = true;
      ending_.reset();
    }
  }
  up_.abort();
}

// --- structured outputs: the verdict event (annotate, opted in) -------------------------------

task<bool> sse_relay::write_verdict_event() {
  if (!check_ || verdict_sent_) co_return true;
  verdict_sent_ = true;
  std::string event = check_->final_event();
  if (event.empty()) co_return true;
  auto w = co_await client_.write_chunk(event);
  co_return w.has_value();
}

task<bool> sse_relay::write_events(std::size_t upto) {
  // The bytes [0, upto) of buf_ go out, less a stripped usage chunk, with the structured-output
  // verdict event spliced in right before [DONE] when one is due (plan_write, relay_events.hpp).
  const relay_events::cut cut = events_.take_cut();
  if (cut.drop_to <= cut.drop_from && cut.verdict_at == no_offset && cut.redact_to <= cut.redact_from) {  // the usual case
    auto w = co_await client_.write_chunk(buf_.view(0, upto));
    co_return w.has_value();
  }
  const write_plan plan = plan_write(upto, cut);
  for (std::size_t i = 0; i < plan.count; ++i) {
    const auto& piece = plan.pieces[i];
    if (piece.verdict) {  // rare: annotate with the verdict event asked for
      const bool sent = co_await write_verdict_event();
      if (!sent) co_return false;
      continue;
    }
    if (piece.redacted) {  // rare: an upstream's error event that quoted the gateway's key
      auto w = co_await client_.write_chunk(redacted_event_);
      if (!w) co_return false;
      continue;
    }
    // Straight to the connection, not through put(): one coroutine frame fewer per write.
    auto w = co_await client_.write_chunk(buf_.view(piece.from, piece.to - piece.from));
    if (!w) co_return false;
  }
  co_return true;
}

}  // namespace sluice::proxy
