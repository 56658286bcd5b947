// connection::open: one attempt to connect (resolve, TCP, TLS for rediss://) and to prepare the
// connection (AUTH, SELECT, SCRIPT LOAD of every registered script, PING, sent in one write), all
// under connect-timeout. The connection's loop, reads, writes and commands are in connection.cpp.
#include "redis/connection.hpp"

#include <openssl/ssl.h>

#include <algorithm>

#include <boost/asio/connect.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/write.hpp>

#include "observability/log.hpp"

namespace sluice::redis {

task<bool> connection::open(std::string& why) {
  const auto& server = settings_.server;
  parser_.reset();
  const std::uint64_t epoch = ++epoch_;
  opening_ = true;
  // The whole of open() runs under one deadline: on expiry the resolver and the socket are
  // cancelled, which ends whichever step is waiting.
  open_guard_.expires_after(settings_.connect_timeout);
  open_guard_.async_wait([self = shared_from_this(), epoch](error_code ec) {
    if (ec || self->epoch_ != epoch || !self->opening_) return;
    self->resolver_.cancel();
    self->close_socket();
  });
  struct leave {
    connection& c;
    ~leave() {
      c.opening_ = false;
      c.open_guard_.cancel();
    }
  } on_exit{*this};
  auto timed_out = [&] { return clock::now() >= open_guard_.expiry(); };

  error_code ec;
  auto endpoints = co_await resolver_.async_resolve(server.host, std::to_string(server.port), ec_out(ec));
  if (stopping_) co_return false;
  if (ec) {
    why = timed_out() ? "connect timeout (resolve)" : "resolve: " + ec.message();
    co_return false;
  }
  if (server.tls) {
    if (tls_context_ == nullptr) {
      why = "rediss:// needs a TLS context";
      co_return false;
    }
    tls_ = std::make_unique<ssl::stream<tcp::socket>>(ex_, *tls_context_);
  } else {
    tls_.reset();
    socket_ = tcp::socket(ex_);
  }
  co_await net::async_connect(lowest(), endpoints, ec_out(ec));
  if (stopping_) co_return false;
  if (ec) {
    why = timed_out() ? "connect timeout" : "connect: " + ec.message();
    co_return false;
  }
  lowest().set_option(tcp::no_delay(true), ec);
  if (tls_) {
    if (!SSL_set_tlsext_host_name(tls_->native_handle(), server.host.c_str())) {
      why = "TLS: cannot set the server name";
      co_return false;
    }
    tls_->set_verify_mode(ssl::verify_peer);
    tls_->set_verify_callback(ssl::host_name_verification(server.host));
    co_await tls_->async_handshake(ssl::stream_base::client, ec_out(ec));
    if (stopping_) co_return false;
    if (ec) {
      why = timed_out() ? "connect timeout (TLS)" : "TLS handshake: " + ec.message();
      co_return false;
    }
  }

  // The preamble, one write: AUTH, SELECT, SCRIPT LOAD of each script, and a PING that proves the
  // session can run commands (a server wanting a password answers NOAUTH here, not later).
  std::string batch;
  std::vector<std::string_view> what;  // names the step each reply answers
  if (!server.password.empty()) {
    if (server.user.empty()) {
      const std::string_view a[] = {"AUTH", server.password};
      append_command(batch, a);
    } else {
      const std::string_view a[] = {"AUTH", server.user, server.password};
      append_command(batch, a);
    }
    what.push_back("AUTH");
  }
  std::string db;
  if (server.db != 0) {
    db = std::to_string(server.db);
    const std::string_view a[] = {"SELECT", db};
    append_command(batch, a);
    what.push_back("SELECT");
  }
  for (const auto& s : scripts_) {
    const std::string_view a[] = {"SCRIPT", "LOAD", s.source};
    append_command(batch, a);
    what.push_back("SCRIPT LOAD");
  }
  {
    const std::string_view a[] = {"PING"};
    append_command(batch, a);
    what.push_back("PING");
  }
  co_await write_all(batch, ec);
  if (stopping_) co_return false;
  if (ec) {
    why = timed_out() ? "connect timeout (preamble)" : "write: " + ec.message();
    co_return false;
  }
  std::size_t answered = 0, script_index = 0;
  while (answered < what.size()) {
    std::optional<reply> r = parser_.next();
    if (!r) {
      if (parser_.failed()) {
        why = "protocol error: " + parser_.error();
        co_return false;
      }
      const std::size_t n = co_await read_some(ec);
      if (stopping_) co_return false;
      if (ec) {
        why = timed_out() ? "connect timeout (preamble)" : "read: " + ec.message();
        co_return false;
      }
      parser_.feed(read_buffer_.data(), n);
      continue;
    }
    const std::string_view step = what[answered++];
    if (r->is_error()) {
      // Redis' messages name the problem (WRONGPASS, NOAUTH, ERR DB index...), never the password.
      why = std::string(step) + " refused: " + r->str;
      co_return false;
    }
    if (step == "SCRIPT LOAD") {
      const script& s = scripts_[script_index++];
      if (r->str != s.sha1) {
        why = "SCRIPT LOAD of " + s.name + " returned an unexpected SHA1";
        co_return false;
      }
    }
  }
  co_return true;
}

}  // namespace sluice::redis
