#include "upstream/client.hpp"

#include <openssl/ssl.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/read.hpp>

#include "runtime/socket_io.hpp"
#include "upstream/connection.hpp"
#include "upstream/framing.hpp"

namespace sluice::upstream {

namespace {

bool is_stale_error(const error_code& ec) {
  return ec == net::error::eof || ec == net::error::connection_reset || ec == net::error::broken_pipe ||
         ec == bhttp::error::end_of_stream || ec == net::ssl::error::stream_truncated;
}

error map_io_error(const error_code& ec, std::string_view phase, bool aborted) {
  if (aborted) return error::make(errc::cancelled, "upstream request aborted");
  if (ec == beast::error::timeout) {
    error e = error::make(errc::upstream_timeout, "upstream timed out " + std::string(phase));
    e.retryable = true;
    return e;
  }
  if (ec == bhttp::error::header_limit) return error::make(errc::upstream_protocol, "upstream response head too large");
  error e = error::make(errc::upstream_connect, "upstream connection failed " + std::string(phase) + ": " + ec.message());
  e.retryable = true;
  return e;
}

}  // namespace

void abort_handle::abort() noexcept {
  aborted_ = true;
  if (conn_) conn_->close();
}

// --- response ---------------------------------------------------------------------------------

response::response(std::unique_ptr<connection> conn, std::weak_ptr<pool> home, abort_handle& abort)
    : conn_(std::move(conn)), home_(std::move(home)), abort_(abort) {}

response::~response() {
  abort_.conn_ = nullptr;
  if (!conn_) return;
  auto& p = conn_->parser();
  if (p.is_done() && p.keep_alive() && conn_->reusable && conn_->tcp().socket().is_open() && !abort_.aborted_) {
    if (auto home = home_.lock()) {
      home->put(std::move(conn_));
      return;
    }
  }
  conn_->close();
}

unsigned response::status() const { return conn_->parser().get().result_int(); }
const bhttp::fields& response::head() const { return conn_->parser().get().base(); }
void response::forget_head() { conn_->parser().get().base().clear(); }
bool response::done() const { return conn_->parser().is_done(); }
std::optional<std::uint64_t> response::content_length() const {
  const auto len = conn_->parser().content_length();
  if (!len || filter_) return std::nullopt;
  return *len;
}
bool response::has_buffered_body() const noexcept {
  return conn_ && (conn_->buffered() > 0 || filtered_at_ < filtered_.size());
}
std::size_t response::buffer_capacity() const noexcept {
  // A filter's pending output and partial input count too.
  return (conn_ ? conn_->buffer_capacity() : 0) + filtered_.capacity() + (filter_ ? filter_->held_bytes() : 0);
}
void response::trim() noexcept {
  if (conn_) conn_->trim();
  if (filtered_at_ == filtered_.size()) {
    filtered_.clear();
    filtered_.shrink_to_fit();
    filtered_at_ = 0;
  }
}

void response::expect_bulk(std::size_t bytes) {
  if (conn_) conn_->reserve_read(bytes);
}

duration response::idle_timeout() const noexcept { return conn_->idle_timeout; }

void response::abort() noexcept {
  abort_.aborted_ = true;
  conn_->close();
}

result<std::size_t> response::read_buffered(char* dst, std::size_t cap) {
  // Decodes what is already buffered into dst: every chunk one socket read brought goes out with
  // one write of the relay.
  if (filter_) return read_filtered(dst, cap);
  return decode_buffered(conn_->parser(), conn_->buffer(), dst, cap);
}

result<std::size_t> response::read_filtered(char* dst, std::size_t cap) {
  // dst takes the decoded bytes first (the filter's input), then the filter's output.
  while (filtered_at_ == filtered_.size()) {
    filtered_.clear();
    filtered_at_ = 0;
    auto& p = conn_->parser();
    if (p.is_done()) {
      if (filter_ended_) return std::size_t{0};
      filter_ended_ = true;
      filter_->end(filtered_);
      continue;
    }
    auto got = decode_buffered(p, conn_->buffer(), dst, cap);
    if (!got) return got;
    if (*got == 0) {
      if (!p.is_done()) return std::size_t{0};
      continue;  // that completed the body: the filter's end is next
    }
    filter_->feed(std::string_view(dst, *got), filtered_);
  }
  const std::size_t n = std::min(cap, filtered_.size() - filtered_at_);
  std::memcpy(dst, filtered_.data() + filtered_at_, n);
  filtered_at_ += n;
  return n;
}

std::optional<result<std::size_t>> response::try_read(char* dst, std::size_t cap) {
  auto& p = conn_->parser();
  if (!p.is_done() || filter_) {  // a filter may still owe bytes once the body is done
    // The socket is read only when nothing decodable is left in the buffer.
    auto got = read_buffered(dst, cap);
    if (!got || *got > 0) return got;
    if (!p.is_done()) return std::nullopt;
  }
  conn_->tcp().expires_never();
  return std::size_t{0};
}

task<error_code> response::read_socket(bool& eof) {
  if (idle_watched_) conn_->tcp().expires_never();
  else conn_->tcp().expires_after(conn_->idle_timeout);
  return conn_->read_more(eof, idle_watched_);
}

std::optional<error> response::read_failure(const error_code& ec, bool eof) const {
  if (!ec && eof && !end_of_input(conn_->parser()))  // the end of a close-delimited body; anything else was cut short
    return error::make(errc::upstream_protocol, "upstream closed the connection before the response ended");
  if (!ec) return std::nullopt;
  if (ec == bhttp::error::buffer_overflow)
    return error::make(errc::upstream_protocol, "upstream sent a malformed response body");
  return map_io_error(ec, "while reading the response body", abort_.aborted_);
}

task<result<std::size_t>> response::read_some(char* dst, std::size_t cap) {
  while (true) {
    if (auto r = try_read(dst, cap)) co_return std::move(*r);
    bool eof = false;
    const error_code ec = co_await read_socket(eof);
    if (auto e = read_failure(ec, eof)) co_return std::move(*e);
  }
}

task<result<std::string>> response::read_all(std::size_t limit) {
  std::string out;
  if (auto len = conn_->parser().content_length(); len && *len <= limit) out.reserve(static_cast<std::size_t>(*len));
  char buf[16 * 1024];
  while (true) {
    auto n = co_await read_some(buf, sizeof buf);
    if (!n) co_return std::move(n).err();
    if (*n == 0) break;
    if (out.size() + *n > limit)
      co_return error::make(errc::upstream_protocol,
                            "upstream response body exceeds " + std::to_string(limit) + " bytes");
    out.append(buf, *n);
  }
  co_return out;
}

// --- client -----------------------------------------------------------------------------------

client::client(net::any_io_executor ex, const options& opts, url target, ssl::context* tls)
    : ex_(std::move(ex)), opts_(opts), target_(std::move(target)), tls_(tls), pool_(std::make_shared<pool>()) {
  pool_->max_idle = opts_.pool_max_idle;
}

client::~client() {
  for (auto& c : pool_->idle) c->close();
}

std::size_t client::idle_connections() const { return pool_->idle.size(); }

task<result<std::unique_ptr<connection>>> client::connect(abort_handle& abort, duration deadline_left) {
  std::unique_ptr<connection> c =
      target_.tls ? std::make_unique<connection>(ex_, *tls_, opts_.max_response_head)
                  : std::make_unique<connection>(ex_, opts_.max_response_head);
  abort.conn_ = c.get();
  // On every failure path the connection dies here: unregister it from the abort handle.
  struct unregister {
    abort_handle& a;
    bool armed = true;
    ~unregister() {
      if (armed) a.conn_ = nullptr;
    }
  } guard{abort};

  error_code ec;
  tcp::resolver::results_type endpoints;
  // An IP literal needs no resolver (which would hop to Asio's resolver thread on every connect).
  if (auto literal = net::ip::make_address(target_.host, ec); !ec) {
    endpoints = tcp::resolver::results_type::create(tcp::endpoint(literal, target_.port), target_.host,
                                                    std::to_string(target_.port));
  } else {
    ec = {};
    tcp::resolver resolver(ex_);
    endpoints = co_await resolver.async_resolve(target_.host, std::to_string(target_.port), ec_out(ec));
  }
  if (abort.aborted()) co_return error::make(errc::cancelled, "upstream request aborted");
  if (ec) {
    error e = error::make(errc::upstream_connect, "cannot resolve upstream host " + target_.host + ": " + ec.message());
    e.retryable = true;
    co_return e;
  }
  c->tcp().expires_after(std::min(opts_.connect_timeout, deadline_left));
  co_await c->tcp().async_connect(endpoints, ec_out(ec));
  if (ec) co_return map_io_error(ec, "connecting", abort.aborted());
  c->tcp().socket().set_option(tcp::no_delay(true), ec);

  if (c->is_tls()) {
    auto& s = c->tls_stream();
    if (!SSL_set_tlsext_host_name(s.native_handle(), target_.host.c_str()))
      co_return error::make(errc::upstream_connect, "cannot set TLS SNI for " + target_.host);
    s.set_verify_mode(ssl::verify_peer);
    s.set_verify_callback(ssl::host_name_verification(target_.host));
    c->tcp().expires_after(std::min(opts_.tls_timeout, deadline_left));
    co_await s.async_handshake(ssl::stream_base::client, ec_out(ec));
    if (ec) co_return map_io_error(ec, "in the TLS handshake", abort.aborted());
  }
  c->tcp().expires_never();
  ++stats_.connections_opened;
  guard.armed = false;
  co_return std::move(c);
}

task<result<std::unique_ptr<connection>>> client::ready_connection(abort_handle& abort, duration deadline_left,
                                                                   bool fresh) {
  // Newest idle connection first; drop the ones that are too old or that the peer closed.
  std::unique_ptr<connection> c;
  if (!fresh)
    c = pool_->take(std::chrono::steady_clock::now(), opts_.pool_idle_timeout, [](connection& idle) { return idle.looks_dead(); });
  if (c) {
    c->reused = true;
    ++stats_.connections_reused;
    co_return std::move(c);
  }
  auto made = co_await connect(abort, deadline_left);
  if (!made) co_return std::move(made).err();
  (*made)->reused = false;
  co_return std::move(*made);
}

task<error_code> client::send_streamed(connection& c, request& req, body_source& body,
                                       std::optional<error>& body_failure) {
  const bool chunked = !body.length();
  error_code ec = co_await c.write_raw(net::buffer(runtime::head_bytes(req.base())));
  constexpr std::size_t piece = 64 * 1024;
  constexpr std::size_t line = 8;  // room before a piece for its chunk-size line ("10000\r\n" at most)
  const auto buf = std::make_unique<char[]>(line + piece + 2);  // and after it for its CRLF
  while (!ec) {
    auto n = co_await body.read_some(buf.get() + line, piece);
    if (!n) {
      body_failure = std::move(n).err();
      co_return error_code(net::error::operation_aborted);
    }
    if (*n == 0) break;
    c.tcp().expires_after(opts_.idle_between_events);  // each piece must be taken in time
    if (!chunked) {
      ec = co_await c.write_raw(net::buffer(buf.get() + line, *n));
      continue;
    }
    char size_line[line + 1];
    const int w = std::snprintf(size_line, sizeof size_line, "%zx\r\n", *n);
    char* start = buf.get() + line - w;
    std::memcpy(start, size_line, static_cast<std::size_t>(w));
    std::memcpy(buf.get() + line + *n, "\r\n", 2);
    ec = co_await c.write_raw(net::buffer(start, static_cast<std::size_t>(w) + *n + 2));
  }
  if (!ec && chunked) ec = co_await c.write_raw(net::buffer(std::string_view("0\r\n\r\n")));
  co_return ec;
}

task<result<std::unique_ptr<response>>> client::send(request& req, abort_handle& abort, duration deadline_left,
                                                     body_source* body) {
  const auto give_up_at = deadline_left == duration::max() ? std::chrono::steady_clock::time_point::max()
                                                           : std::chrono::steady_clock::now() + deadline_left;
  auto left = [&] {
    if (give_up_at == std::chrono::steady_clock::time_point::max()) return duration::max();
    return std::max<duration>(std::chrono::duration_cast<duration>(give_up_at - std::chrono::steady_clock::now()),
                              duration(1));
  };
  abort.sent_ = false;
  req.set(bhttp::field::host, target_.host_header());
  req.keep_alive(true);
  if (!body) req.prepare_payload();
  else if (const auto n = body->length()) req.content_length(*n);
  else req.chunked(true);

  for (int attempt = 0; attempt < 2; ++attempt) {
    const auto connect_start = std::chrono::steady_clock::now();
    auto made = co_await ready_connection(abort, left(), body != nullptr);
    if (!made) co_return std::move(made).err();
    std::unique_ptr<connection> c = std::move(*made);
    abort.conn_ = c.get();
    if (abort.aborted()) co_return error::make(errc::cancelled, "upstream request aborted");

    const auto connect_time = std::chrono::steady_clock::now() - connect_start;
    c->idle_timeout = opts_.idle_between_events;
    c->reset_parser(opts_.max_response_head);
    c->tcp().expires_after(std::min(opts_.first_byte_timeout, left()));
    std::optional<error> body_failure;
    abort.sent_ = true;
    error_code ec = body ? co_await send_streamed(*c, req, *body, body_failure) : co_await c->write(req);
    if (body_failure) {
      c->close();
      abort.conn_ = nullptr;
      co_return std::move(*body_failure);
    }
    // An upstream may answer (and close) before a streamed body ended: its answer is what counts.
    if (ec && body && !abort.aborted()) c->reusable = false;
    if (!ec || !c->reusable) {
      c->tcp().expires_after(std::min(opts_.first_byte_timeout, left()));
      ec = co_await c->read_head();
    }
    if (ec) {
      bool stale = c->reused && is_stale_error(ec) && !abort.aborted();
      c->close();
      abort.conn_ = nullptr;
      if (stale && attempt == 0) {
        ++stats_.stale_retries;
        continue;  // the idle connection died under us before any response byte: one fresh try
      }
      co_return map_io_error(ec, "waiting for the response head", abort.aborted());
    }
    c->tcp().expires_never();
    auto res = std::make_unique<response>(std::move(c), pool_, abort);
    res->set_connect_time(std::chrono::duration_cast<duration>(connect_time));
    co_return res;
  }
  co_return error::make(errc::upstream_connect, "upstream connection failed");
}

std::unique_ptr<ssl::context> make_tls_context() {
  auto ctx = std::make_unique<ssl::context>(ssl::context::tls_client);
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                   ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  ctx->set_default_verify_paths();
  ctx->set_verify_mode(ssl::verify_peer);
  return ctx;
}

}  // namespace sluice::upstream
