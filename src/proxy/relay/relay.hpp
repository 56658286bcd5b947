// sse_relay: forwards one upstream SSE response to the client event by event, with back-pressure
// (the next upstream read starts only after the previous events were written), the upstream
// aborted the moment the request is cancelled (the client's watch, or this relay's own watchdog
// tick: deadline, drain, memory, idle upstream), and in-band error events instead of silent ends.
// Lives in the pipeline's coroutine frame; one thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/boxed.hpp"
#include "core/error.hpp"
#include "http/connection.hpp"
#include "observability/gauge_hold.hpp"
#include "proxy/cancel.hpp"
#include "proxy/relay/relay_context.hpp"
#include "proxy/relay/relay_events.hpp"
#include "proxy/relay/stream_buffer.hpp"
#include "proxy/relay/stream_identity.hpp"
#include "proxy/structured/structured_output.hpp"
#include "sse/parser.hpp"
#include "upstream/client.hpp"

namespace sluice::proxy {

namespace bhttp = boost::beast::http;

struct relay_result {
  bool completed = false;      // [DONE] forwarded and the chunked body finished
  bool client_gone = false;    // the client disconnected or stalled; nothing more was written
  boxed<error> failure;  // upstream failure after the head (sent in-band); boxed: rare, in a stream-long frame
  std::uint64_t events = 0;
  std::uint64_t content_events = 0;
  std::uint64_t bytes_out = 0;
  std::uint64_t completion_tokens = 0;  // from a usage chunk, when the upstream sent one
  std::uint64_t prompt_tokens = 0;
  bool usage_stripped = false;          // the usage chunk sluice asked for was kept from the client
  runtime::steady::time_point first_event{};
  double relay_overhead_seconds = 0;  // time spent handling events in sluice (parse + write issue)
};

// Also a watchdog item: on each tick it checks the upstream's idle timeout, the request deadline,
// the drain and the memory-pressure loop, and cancels the request when one says so (the pump then
// ends the stream with that reason's in-band error).
class sse_relay : public runtime::watchdog::item {
 public:
  sse_relay(http::downstream& client, upstream::response& up, request_cancel& cancel, const relay_context& ctx,
            runtime::steady::time_point request_start);
  ~sse_relay() override;

  // Relays the body; the chunked head has been written already. Never throws on I/O errors.
  task<void> run();
  // The head could not be written (the client left): nothing to relay, the upstream is closed.
  void client_left_before_head() noexcept;
  const relay_result& result() const noexcept { return res_; }

  std::size_t buffered_bytes() const noexcept { return buf_.size(); }
  // Structured outputs (structured_output.hpp): each event's parsed object goes to `check`, which
  // may end the stream in-band (reject) or add its sluice.schema event before the end (annotate).
  void set_output_check(stream_check* check) noexcept { check_ = check; }
  // Traces: the first event's payload goes to `t` (the upstream's response id and model).
  void identify_into(stream_identity& t) noexcept { identity_ = &t; }
  // The Responses API ends a stream with response.completed (or .incomplete) and no [DONE].
  void end_on_response_completed() noexcept { events_.end_on_response_completed(); }
  // sluice asked the upstream for `stream_options.include_usage` although the client did not: read
  // the usage chunk ({"choices":[],"usage":{...}}) for accounting, but do not forward it.
  void strip_usage_chunk() noexcept { events_.strip_usage_chunk(); }
  // The request's total deadline (request-timeout): past it the stream ends with an in-band error.
  void set_deadline(runtime::steady::time_point t) noexcept { deadline_ = t; }
  // Registers with the thread's watchdog, whose tick then also enforces the upstream's idle
  // timeout (instead of a timer per upstream read).
  void watch(runtime::watchdog& w);
  void on_tick(runtime::steady::time_point now) override;

 private:
  task<void> pump();
  task<void> pump_events();
  // Writes ending_ as an in-band error event and ends the body.
  task<void> fail_in_band();
  // Before the first write the client's head is held: it goes with events already buffered
  // (`buffered`, n set), or now, before a read that waits (`read`); `stop`: ending_ or
  // client_gone says why. Its own coroutine: pump_events' frame waits on every read of the stream.
  enum class head_step : std::uint8_t { buffered, read, stop };
  task<head_step> send_head_first(std::size_t& n);
  // An upstream read in steps, for pump_events' loop (which waits on the socket read itself).
  // read_now(): true when the read came to something without the socket (bytes already buffered,
  // the body's end, an error); read_done(): after a socket read, true when that came to an end
  // (false: read_now() again). Either way `got` is took_read()'s answer and `n` the byte count.
  bool read_now(std::size_t& n, bool& got);
  bool read_done(const error_code& ec, bool eof, std::size_t& n, bool& got);
  // What an upstream read came to (a byte count, the body's end or an error); false: ending_ or
  // client_gone says why.
  bool took_read(sluice::result<std::size_t> r, std::size_t& n);
  task<bool> put(std::size_t from, std::size_t n);
  task<bool> finish_body();
  // The upstream body is complete: the rest of the buffer, the verdict event, the body's end; or
  // the in-band error when the stream's end marker never came (ending_).
  task<void> end_of_body();
  // A malformed or refused event (ending_ says which) in the chunk at `chunk_start`: the good
  // events before it go out, the upstream is closed.
  task<void> forward_before_bad_event(std::size_t chunk_start);
  // The events up to `upto` end the stream and the upstream body is complete: they go out with
  // the body's last chunk in one write.
  bool ends_with_this_write(std::size_t upto) const;
  task<bool> finish_with(std::size_t upto);
  // The read's n bytes, now at buf_'s end (`start`), committed and through the parser (a read that
  // filled the `room` there was grows the buffer): the offset just past the last whole event (npos:
  // none yet), or nullopt for a malformed or refused event (ending_ says why). A plain function, so
  // that pump_events' frame holds no parse result for the stream's life.
  std::optional<std::size_t> parse_read(std::size_t start, std::size_t n, std::size_t room);
  // Checks one event; false stops the parse (malformed payload).
  bool on_event(const sse::event_view& ev);
  // An upstream error event in buf_ [from, to): without the gateway's keys for the client.
  void redact_event(std::size_t from, std::size_t to);
  // Writes buf_[0, upto) by plan_write: less a stripped usage chunk, with the structured-output
  // verdict event spliced in before [DONE].
  task<bool> write_events(std::size_t upto);
  task<bool> write_verdict_event();
  // Keeps the buffered-bytes gauge and the stream registry in step with the buffer.
  void account_buffer() noexcept;
  // Adds what was written to the client since the last call to sluice_stream_bytes_total.
  void count_bytes_out() noexcept;

  http::downstream& client_;
  upstream::response& up_;
  request_cancel& cancel_;
  const relay_context& ctx_;
  std::uint64_t counted_out_ = 0;  // client bytes already in sluice_stream_bytes_total
  runtime::steady::time_point request_start_;
  obs::gauge_hold active_buffer_;
  admission::stream_handle handle_;
  std::uint64_t accounted_bytes_ = 0;
  runtime::steady::time_point last_content_{};
  runtime::steady::time_point read_at_{};  // when the read being parsed completed
  runtime::steady::time_point reading_since_{};  // an upstream read is pending since; epoch = none
  bool watched_ = false;
  boxed<error> ending_;  // why the stream is ending with an in-band error (also: malformed event)
  stream_buffer buf_;
  sse::parser parser_;
  relay_result res_;
  relay_events events_;                      // the events' bookkeeping (relay_events.hpp)
  stream_check* check_ = nullptr;            // structured outputs; null when not checked
  stream_identity* identity_ = nullptr;       // traces: takes the first event's id and model, then null
  bool verdict_sent_ = false;
  std::string redacted_event_;  // what the next write sends instead of an error event that quoted a key
  runtime::steady::time_point deadline_ = runtime::steady::time_point::max();
};

}  // namespace sluice::proxy
