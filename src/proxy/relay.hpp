// sse_relay: forwards one upstream SSE response to the client event by event, with back-pressure
// (the next upstream read starts only after the previous events were written), a watcher that
// aborts the upstream the moment the client vanishes, and in-band error events instead of silent
// ends. Lives in the handler's coroutine frame; one thread.
#pragma once

#include <cstdint>
#include <optional>

#include "core/error.hpp"
#include "http/connection.hpp"
#include "proxy/options.hpp"
#include "proxy/stream_buffer.hpp"
#include "sse/parser.hpp"
#include "upstream/client.hpp"

namespace sluice::proxy {

namespace bhttp = boost::beast::http;

struct relay_result {
  bool completed = false;      // [DONE] forwarded and the chunked body finished
  bool client_gone = false;    // the client disconnected or stalled; nothing more was written
  std::optional<error> failure;  // upstream failure after the head (sent in-band)
  std::uint64_t events = 0;
  std::uint64_t content_events = 0;
  std::uint64_t bytes_out = 0;
  std::uint64_t completion_tokens = 0;  // from a usage chunk, when the upstream sent one
  std::uint64_t prompt_tokens = 0;
  runtime::steady::time_point first_event{};
};

class sse_relay {
 public:
  sse_relay(http::connection& client, upstream::response& up, const options& opts);

  // Writes `head` (chunked) and relays the body. Never throws on I/O errors.
  task<relay_result> run(bhttp::response<bhttp::empty_body>& head);

  std::size_t buffered_bytes() const noexcept { return buf_.size(); }

 private:
  task<void> pump();
  task<void> pump_events();
  task<void> watch_client();
  task<void> fail_in_band(error e);
  // Checks one event; false stops the parse (malformed payload).
  bool on_event(const sse::event_view& ev);

  http::connection& client_;
  upstream::response& up_;
  stream_buffer buf_;
  sse::parser parser_;
  relay_result res_;
  bool saw_done_ = false;
  bool saw_error_event_ = false;
  std::optional<error> malformed_;
  std::size_t good_end_ = 0;  // within the chunk being parsed: end of the last good event
};

}  // namespace sluice::proxy
