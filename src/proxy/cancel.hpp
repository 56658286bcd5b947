// request_cancel: the one way a request ends early. Only two things call cancel(why): the client's
// watch (the client left) and the relay's watchdog tick (deadline, drain, memory pressure, an idle
// upstream). The first reason is kept; a terminal cancellation goes to the slot that every wait of
// the request is bound to (the admission queue, holds, backoff), and the upstream exchange in
// flight is aborted, so whatever the request waits on fails at once. One thread: the request's.
// Lives in the request's context for its whole life.
#pragma once

#include <cstdint>
#include <string_view>

#include <boost/asio/cancellation_signal.hpp>

#include "core/error.hpp"
#include "http/connection.hpp"
#include "upstream/client.hpp"

namespace sluice::proxy {

enum class cancel_reason : std::uint8_t { none, client_gone, deadline, draining, memory, upstream_idle };
std::string_view to_string(cancel_reason r) noexcept;

class request_cancel final : public http::peer_listener {
 public:
  request_cancel() = default;
  request_cancel(const request_cancel&) = delete;
  request_cancel& operator=(const request_cancel&) = delete;

  void cancel(cancel_reason why) noexcept;
  void on_peer_gone() noexcept override { cancel(cancel_reason::client_gone); }

  bool cancelled() const noexcept { return why_ != cancel_reason::none; }
  bool client_gone() const noexcept { return why_ == cancel_reason::client_gone; }
  cancel_reason reason() const noexcept { return why_; }
  // The error a stream the gateway itself ended reports in-band (not for client_gone).
  error ending() const;

  // Bind every wait of the request to this slot (net::bind_cancellation_slot, or the admission
  // queue's withdraw slot).
  net::cancellation_slot slot() noexcept { return signal_.slot(); }
  // Handed to every upstream exchange of the request: cancel() aborts the one in flight.
  upstream::abort_handle& upstream() noexcept { return upstream_; }

 private:
  net::cancellation_signal signal_;
  upstream::abort_handle upstream_;
  cancel_reason why_ = cancel_reason::none;
};

// Waits `d` unless the request is cancelled first (a hold or a backoff); false when it was.
task<bool> pause(duration d, request_cancel& c);

}  // namespace sluice::proxy
