// downstream: where a request's answer goes. The client's connection (http::connection) is the
// one real kind; a background job's event log (proxy::job_sink) is the other, so that a job runs
// through the same attempt loop and relay as a client's request. The pipeline and the relay write
// only through this. One thread: the owner's.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>

#include "core/error.hpp"
#include "http/types.hpp"

namespace sluice::http {

// Told when a watched client goes away (downstream::watch_peer).
class peer_listener {
 public:
  virtual void on_peer_gone() noexcept = 0;

 protected:
  ~peer_listener() = default;
};

class downstream {
 public:
  // A whole response.
  virtual task<result<void>> write(response& res) = 0;
  // Starts a chunked response: the head, then write_chunk() for each piece, then finish_chunks().
  virtual task<result<void>> write_head(bhttp::response<bhttp::empty_body>& head) = 0;
  // Keeps the head to go out with the first streamed piece (one write instead of two), for a body
  // whose first bytes are already in memory. flush_head() writes a held head alone (before a wait).
  virtual void hold_head(bhttp::response<bhttp::empty_body>& head) = 0;
  virtual bool holds_head() const noexcept = 0;
  virtual task<result<void>> flush_head() = 0;
  virtual task<result<void>> write_chunk(std::string_view data) = 0;
  // write_chunk(data) without waiting and without a coroutine, where the downstream can: true when
  // the chunk went out whole. False: write_chunk(data), with the same bytes, must follow at once and
  // writes it (or the rest of it, when this began it). By default it never can.
  virtual bool try_write_chunk(std::string_view data) {
    (void)data;
    return false;
  }
  virtual task<result<void>> finish_chunks() = 0;
  // write_chunk(data) and finish_chunks() in one write (a stream whose end arrived with its last
  // events).
  virtual task<result<void>> write_last_chunk(std::string_view data) = 0;
  // A body of a length known before it is sent (a download relayed with its upstream's
  // Content-Length): the head with that length, then pieces that add up to it. A downstream that
  // cannot write one sends it chunked instead (the default).
  virtual task<result<void>> write_sized_head(bhttp::response<bhttp::empty_body>& head) {
    head.erase(bhttp::field::content_length);
    return write_head(head);
  }
  virtual task<result<void>> write_piece(std::string_view data) { return write_chunk(data); }
  virtual task<result<void>> finish_pieces() { return finish_chunks(); }

  // The watch of the downstream's going away while the gateway works for it: while the returned
  // guard lives, the listener is told at once when the peer leaves (a client's close or reset, a
  // job's cancel).
  class peer_watch {
   public:
    explicit peer_watch(downstream& d) noexcept : d_(&d) {}
    peer_watch(peer_watch&& o) noexcept : d_(std::exchange(o.d_, nullptr)) {}
    peer_watch& operator=(peer_watch&&) = delete;
    ~peer_watch() {
      if (d_) d_->end_watch();
    }

   private:
    downstream* d_;
  };
  [[nodiscard]] virtual peer_watch watch_peer(peer_listener& l) = 0;
  virtual bool peer_gone() const noexcept = 0;
  // Hard close: pending operations fail at once.
  virtual void close() noexcept = 0;
  // A write that made no progress for too long ended the downstream.
  virtual bool stalled() const noexcept = 0;
  virtual std::uint64_t bytes_written() const noexcept = 0;

 protected:
  ~downstream() = default;
  // The watch's guard ended.
  virtual void end_watch() noexcept = 0;
};

}  // namespace sluice::http
