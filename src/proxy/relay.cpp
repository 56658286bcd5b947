#include "proxy/relay.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>

#include "http/error_response.hpp"

namespace sluice::proxy {

using namespace boost::asio::experimental::awaitable_operators;
namespace json = boost::json;

sse_relay::sse_relay(http::connection& client, upstream::response& up, const options& opts)
    : client_(client),
      up_(up),
      buf_(static_cast<std::size_t>(opts.stream_buffer_initial), static_cast<std::size_t>(opts.stream_buffer)),
      parser_(static_cast<std::size_t>(opts.stream_buffer)) {}

task<relay_result> sse_relay::run(bhttp::response<bhttp::empty_body>& head) {
  auto w = co_await client_.write_head(head);
  if (!w) {
    up_.abort();
    res_.client_gone = true;
    co_return res_;
  }
  // The pump and the watcher race: whichever ends first cancels the other.
  client_.rearm();
  co_await (pump() || watch_client());
  client_.rearm();
  res_.bytes_out = client_.bytes_written();
  co_return res_;
}

task<void> sse_relay::watch_client() {
  auto ev = co_await client_.wait_disconnect();
  if (ev == http::connection::peer_event::gone) {
    res_.client_gone = true;
    up_.abort();  // closes the upstream socket now: the pump's pending read fails at once
    co_return;
  }
  if (ev == http::connection::peer_event::cancelled) co_return;
  // Pipelined bytes arrived: they wait for the next request. Stay out of the race until cancelled
  // (the pump cancels the client socket's operations when it ends).
  co_await client_.wait_cancelled();
}

bool sse_relay::on_event(const sse::event_view& ev) {
  ++res_.events;
  if (ev.data == "[DONE]") {
    saw_done_ = true;
    good_end_ = ev.end;
    return true;
  }
  unsigned char stack[4096];
  json::monotonic_resource mr(stack, sizeof stack);
  error_code ec;
  json::value v = json::parse(ev.data, ec, &mr);
  if (ec || !v.is_object()) {
    malformed_ = error::make(errc::upstream_protocol, "upstream sent a malformed stream event (not JSON)");
    return false;
  }
  const auto& obj = v.get_object();
  if (obj.contains("error")) saw_error_event_ = true;  // the upstream's own in-band error: forward it
  if (const auto* usage = obj.if_contains("usage"); usage && usage->is_object()) {
    if (const auto* c = usage->get_object().if_contains("completion_tokens"); c && c->is_int64())
      res_.completion_tokens = static_cast<std::uint64_t>(c->get_int64());
    if (const auto* p = usage->get_object().if_contains("prompt_tokens"); p && p->is_int64())
      res_.prompt_tokens = static_cast<std::uint64_t>(p->get_int64());
  }
  if (const auto* choices = obj.if_contains("choices"); choices && choices->is_array() && !choices->get_array().empty())
    ++res_.content_events;
  if (res_.first_event == runtime::steady::time_point{}) res_.first_event = runtime::steady::now();
  good_end_ = ev.end;
  return true;
}

task<void> sse_relay::fail_in_band(error e) {
  // An in-band error event, then a clean end of the chunked body; never [DONE].
  std::string event = sse::format_event(http::error_body(e));
  res_.failure = std::move(e);
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
  client_.cancel();  // ends the watcher's wait, if the race has not already done so
}

task<void> sse_relay::pump_events() {
  while (true) {
    std::size_t room = buf_.free_size();
    if (room == 0) {  // cannot happen: the parser's event bound equals the buffer bound
      co_await fail_in_band(error::make(errc::upstream_protocol, "stream buffer exhausted"));
      break;
    }
    auto n = co_await up_.read_some(buf_.free_data(), room);
    if (res_.client_gone) break;
    if (!n) {
      co_await fail_in_band(std::move(n).err());
      break;
    }
    if (*n == 0) {  // upstream body complete
      if (buf_.size() > 0) {  // whitespace or a final event without its blank line: pass it on
        auto w = co_await client_.write_chunk(buf_.view(0, buf_.size()));
        if (!w) { res_.client_gone = true; break; }
        buf_.consume(buf_.size());
      }
      if (saw_done_ || saw_error_event_) {
        auto w = co_await client_.finish_chunks();
        if (!w) { res_.client_gone = true; break; }
        res_.completed = saw_done_;
        if (saw_error_event_ && !saw_done_)
          res_.failure = error::make(errc::upstream_status, "upstream sent an error event");
      } else {
        co_await fail_in_band(error::make(errc::upstream_protocol, "upstream ended the stream without [DONE]"));
      }
      break;
    }
    std::size_t start = buf_.size();
    buf_.commit(*n);
    good_end_ = 0;
    auto boundary = parser_.feed(buf_.view(start, *n), [this](const sse::event_view& ev) { return on_event(ev); });
    if (!boundary || malformed_) {
      // Forward every complete good event before the bad one, then the error.
      std::size_t upto = start + good_end_;
      if (good_end_ > 0) {
        auto w = co_await client_.write_chunk(buf_.view(0, upto));
        if (!w) { res_.client_gone = true; break; }
      }
      up_.abort();
      // Picked in its own statement: GCC 12 evaluates both arms of a ?: inside a co_await argument.
      error why = malformed_ ? *malformed_ : boundary.err();
      co_await fail_in_band(std::move(why));
      break;
    }
    if (*boundary != sse::parser::npos) {
      std::size_t upto = start + *boundary;
      auto w = co_await client_.write_chunk(buf_.view(0, upto));
      if (!w) {
        res_.client_gone = true;
        up_.abort();
        break;
      }
      buf_.consume(upto);
    }
  }
}

}  // namespace sluice::proxy
