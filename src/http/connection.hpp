// connection: one downstream client socket and its read buffer, with the request-reading phases
// (idle, head, body) under their own deadlines and the response-writing primitives (whole response,
// streamed chunked body). Owned by exactly one session coroutine on one worker thread; not
// thread-safe. A watchdog item: a write that makes no progress for write_stall_timeout closes it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "core/error.hpp"
#include "http/body_policy.hpp"
#include "http/downstream.hpp"
#include "http/request_framing.hpp"
#include "http/server_options.hpp"
#include "http/types.hpp"
#include "runtime/watchdog.hpp"

namespace sluice::http {

class connection final : public runtime::watchdog::item, public downstream {
 public:
  connection(tcp::socket socket, const server_options& opts);
  // A connection another worker process of the pod handed over (runtime::handover_mesh), with the
  // bytes it had read from it: they are read first, as if they had just arrived.
  connection(tcp::socket socket, const server_options& opts, std::string_view already_read);
  ~connection() override;

  // Whether this connection came from another worker process (it is not handed on again).
  bool handed_over() const noexcept { return handed_over_; }
  // What was read from the client beyond the request being handled (pipelined bytes).
  std::string_view unread() const noexcept {
    const auto d = buffer_.cdata();
    return {static_cast<const char*>(d.data()), d.size()};
  }
  // Gives the socket up without a FIN, for another process that now holds a duplicate of it:
  // pending operations fail, the descriptor leaves this process's reactor and is closed here.
  void let_go() noexcept;

  // Reads the next request. errc::cancelled means the peer closed (or stayed idle past
  // idle_timeout) between requests: close quietly. Other errors deserve an error response. A
  // request whose body `policy` streams comes with an empty body: read_body_some() reads it.
  task<result<request>> read_request(const body_policy* policy = nullptr);
  // The streamed body of the request read last (body_policy, ADR 0027): up to `cap` bytes into
  // `dst`, 0 at its end. The first call answers a client's `Expect: 100-continue` (so a refused
  // request never sends its body). Each read must make progress within body-timeout. Errors:
  // cancelled (the client left), request_timeout, payload_too_large (a chunked body past its cap),
  // bad_request (broken framing).
  task<result<std::size_t>> read_body_some(char* dst, std::size_t cap);
  bool body_streamed() const noexcept { return streamed_ != nullptr; }
  // A streamed body not read to its end: this connection cannot carry another request.
  bool body_pending() const noexcept { return streamed_ && !streamed_->is_done(); }
  // Its Content-Length (nullopt: chunked), and the body bytes read so far.
  std::optional<std::uint64_t> body_length() const noexcept;
  std::uint64_t body_bytes_read() const noexcept { return streamed_read_; }
  // After read_request() failed: the x-request-id the broken request carried, as far as it was
  // read ("" when none was seen). Unchecked client input: sanitize before use.
  const std::string& failed_request_id() const noexcept { return failed_request_id_; }
  // After read_request() failed: the framing rule the head broke (none for other failures).
  framing_refusal failed_refusal() const noexcept { return failed_refusal_; }
  // After read_request() failed: the body was refused by its streamed route's cap (body_policy).
  bool failed_upload_cap() const noexcept { return failed_upload_; }
  // After a refusal that ends the connection: FIN after the answer, then the client's further
  // bytes dropped for at most linger-timeout / linger-bytes (server_options). The caller closes.
  task<void> linger_close();

  task<result<void>> write(response& res) override;
  // Starts a chunked response: the head, then write_chunk() for each piece, then finish_chunks().
  task<result<void>> write_head(bhttp::response<bhttp::empty_body>& head) override;
  // Keeps the head to go out with the first streamed piece (one write instead of two), for a body
  // whose first bytes are already in memory. flush_head() writes a held head alone (before a wait).
  void hold_head(bhttp::response<bhttp::empty_body>& head) override;
  bool holds_head() const noexcept override { return !held_head_.empty(); }
  task<result<void>> flush_head() override;
  task<result<void>> write_chunk(std::string_view data) override;
  // The socket takes the chunk at once (the usual case for a reading client): written, no frame,
  // no trip through the loop. When it takes only part, write_chunk(data) sends the rest.
  bool try_write_chunk(std::string_view data) override;
  task<result<void>> finish_chunks() override;
  // write_chunk(data) and finish_chunks() in one write (a stream whose end arrived with its last
  // events).
  task<result<void>> write_last_chunk(std::string_view data) override;
  // The head as it is (its Content-Length), then the body's bytes unframed.
  task<result<void>> write_sized_head(bhttp::response<bhttp::empty_body>& head) override;
  task<result<void>> write_piece(std::string_view data) override;
  task<result<void>> finish_pieces() override { return nothing_to_write(); }

  // Watches the client for a disconnect while the gateway works for it (the upstream exchange,
  // the relay), with a plain handler instead of a coroutine raced beside each phase: when the peer
  // closes or resets, peer_gone() becomes true and the listener is told at once (it aborts the
  // upstream exchange, so whatever waits on it fails now). Pipelined bytes end the watch quietly
  // (the next read_request sees them). The watch lasts as long as the returned guard; the wait
  // itself stays armed after it (a keep-alive connection's next request completes it unused), and
  // a wait cancelled by another operation on the socket (a read deadline) re-arms itself.
  [[nodiscard]] peer_watch watch_peer(peer_listener& l) override;
  bool peer_gone() const noexcept override { return peer_gone_; }

  // Hard close: pending operations fail at once.
  void close() noexcept override;

  bool stalled() const noexcept override { return stalled_; }
  bool is_open() const noexcept { return socket_.is_open(); }
  std::uint64_t bytes_written() const noexcept override { return bytes_written_; }
  tcp::socket& socket() noexcept { return socket_; }
  const server_options& options() const noexcept { return opts_; }

  void on_tick(runtime::steady::time_point now) override;

  // Membership in the owning server's list of live connections (unlinks itself on destruction).
  boost::intrusive::list_member_hook<boost::intrusive::link_mode<boost::intrusive::auto_unlink>> server_hook;

 private:
  // Outlives the connection while a watch wait is queued: the wait's handler finds conn null then.
  struct watch_state {
    connection* conn;
  };
  void end_watch() noexcept override { listener_ = nullptr; }
  void arm_watch();
  void on_watch(const error_code& ec);

  using request_parser = bhttp::request_parser<bhttp::string_body>;
  using streamed_parser = bhttp::request_parser<bhttp::buffer_body>;
  // read_request()'s steps (connection_read.cpp):
  void start_parse(request_parser& parser, const body_policy* policy);  // limits; last failure's notes cleared
  // After the head: the body streamed under `cap` (the head as the request), or read whole under
  // max-body (nullopt: go on).
  result<request> stream_body(request_parser& parser, std::uint64_t cap);
  std::optional<error> check_whole_length(request_parser& parser);
  // One socket read for a streamed body, under body_timeout (connection_body.cpp).
  task<std::optional<error>> read_body_bytes();
  // One put of buffered body bytes into dst (`used`: input bytes the parser took).
  result<std::size_t> put_body(char* dst, std::size_t cap, std::size_t& used);
  task<bool> send_continue();
  // A failed read of the head as the error to answer (nullopt: it did not fail).
  std::optional<error> head_read_failure(const request_parser& parser, const error_code& ec, bool timed_out);
  std::optional<error> parse_buffered_body(request_parser& parser);  // the body, as far as it came with the head
  // The rest of a body that did not come with its head: 100 Continue when asked, then read under body_timeout.
  task<std::optional<error>> read_rest_of_body(request_parser& parser);
  // A failed read as the error to answer; notes the request's x-request-id first.
  error classify(const request_parser& parser, const error_code& ec, bool timed_out, bool head);
  error head_too_large(const request_parser& parser);  // 414 for a request line past its limit, else 431
  void note_request_id(const request_parser& parser);  // failed_request_id_, from the fields or the raw head
  task<void> expire_after(duration d);
  // The framing rules on a parsed head (request_framing); rewrites an absolute-form target to its path.
  std::optional<error> check_framing(request& head);
  task<void> discard_input(std::uint64_t limit);
  // The rest of a request's body into the parser (request_framing.hpp: hold_body_bytes).
  task<error_code> read_body(request_parser& parser);
  // Takes its buffers by value: write_chunk() and the others return its task without a coroutine
  // frame of their own (one frame per streamed piece, not two), so the task must own them.
  // `tried`: the bytes of this piece (with its size line, in held_head_) that try_write_chunk()
  // sent already; not_tried when it did not begin it.
  static constexpr std::size_t not_tried = static_cast<std::size_t>(-1);
  template <class Buffers>
  task<result<void>> write_streamed(Buffers buffers, std::size_t tried = not_tried);
  // The held bytes and `buffers` offered to the socket at once; true when it took them all (the
  // write is then done: the held bytes given back, the bytes counted). `sent`: what it took.
  template <class Buffers>
  bool sent_whole_now(const Buffers& buffers, std::size_t& sent);
  static task<result<void>> nothing_to_write();
  task<bool> write_rest_of_head(std::size_t from, std::size_t& n);
  void release_head() noexcept { std::string().swap(held_head_); }  // frees it, not only clears
  result<void> end_write(const error_code& ec, std::size_t n) noexcept;

  tcp::socket socket_;
  // The first read of a fresh connection (its request is usually there already: a typical chat
  // request's head and body), and the read a keep-alive connection waits in between requests
  // (its buffer is held while idle).
  static constexpr std::size_t first_read_bytes = 2048;
  static constexpr std::size_t idle_read_bytes = 1024;

  beast::flat_buffer buffer_;
  const server_options& opts_;
  std::string held_head_;  // hold_head(): serialized, waiting for the first piece; and a chunk's size line during its write
  runtime::steady::time_point idle_deadline_{};  // waiting for a next request until; epoch = not
  bool served_ = false;  // a request was read on this connection
  std::shared_ptr<watch_state> watch_state_;  // made by the first watch
  peer_listener* listener_ = nullptr;         // the watch in force; null = none
  bool watch_armed_ = false;                  // a readiness wait for the watch is queued
  bool peer_gone_ = false;
  runtime::steady::time_point write_since_{};  // start of the pending write; epoch = none
  const char* tried_data_ = nullptr;  // the chunk try_write_chunk() sent part of, for write_chunk() to finish
  std::size_t tried_sent_ = 0;        // how much of it (size line included)
  std::uint64_t bytes_written_ = 0;
  bool stalled_ = false;
  std::string failed_request_id_;
  framing_refusal failed_refusal_ = framing_refusal::none;
  std::unique_ptr<streamed_parser> streamed_;  // the streamed body of the request read last
  std::uint64_t streamed_read_ = 0;
  bool continue_asked_ = false;
  bool failed_upload_ = false;  // a streamed body's client waits for 100 Continue
  bool handed_over_ = false;
};

// The value of the first `x-request-id` header line in the unparsed rest of a request head (the
// parser consumes the request line and whole fields as it goes; a line may start at the first
// byte): case-insensitive name, surrounding blanks trimmed, "" when there is none. Pure.
std::string_view scan_request_id(std::string_view raw_head) noexcept;

}  // namespace sluice::http
