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

namespace {

// Past open()'s deadline (its guard has expired or is about to).
bool open_expired(const net::steady_timer& guard) { return connection::clock::now() >= guard.expiry(); }

// Why a step of open() failed: the deadline, or the step's error.
std::string open_failure(const net::steady_timer& guard, std::string_view on_timeout, std::string_view step,
                         const error_code& ec) {
  return open_expired(guard) ? std::string(on_timeout) : std::string(step) + ": " + ec.message();
}

// The preamble, one write: AUTH, SELECT, SCRIPT LOAD of each script, and a PING that proves the
// session can run commands (a server wanting a password answers NOAUTH here, not later).
struct preamble {
  std::string batch;
  std::vector<std::string_view> what;  // names the step each reply answers
};

preamble make_preamble(const endpoint& server, const std::vector<script>& scripts) {
  preamble p;
  if (!server.password.empty()) {
    if (server.user.empty()) {
      const std::string_view a[] = {"AUTH", server.password};
      append_command(p.batch, a);
    } else {
      const std::string_view a[] = {"AUTH", server.user, server.password};
      append_command(p.batch, a);
    }
    p.what.push_back("AUTH");
  }
  if (server.db != 0) {
    const std::string db = std::to_string(server.db);
    const std::string_view a[] = {"SELECT", db};
    append_command(p.batch, a);
    p.what.push_back("SELECT");
  }
  for (const auto& s : scripts) {
    const std::string_view a[] = {"SCRIPT", "LOAD", s.source};
    append_command(p.batch, a);
    p.what.push_back("SCRIPT LOAD");
  }
  const std::string_view a[] = {"PING"};
  append_command(p.batch, a);
  p.what.push_back("PING");
  return p;
}

// Whether the reply to the preamble's `step` accepts it (a SCRIPT LOAD's reply is the next script's SHA1).
bool preamble_reply_ok(std::string_view step, const reply& r, const std::vector<script>& scripts,
                       std::size_t& script_index, std::string& why) {
  if (r.is_error()) {
    // Redis' messages name the problem (WRONGPASS, NOAUTH, ERR DB index...), never the password.
    why = std::string(step) + " refused: " + r.str;
    return false;
  }
  if (step == "SCRIPT LOAD") {
    const script& s = scripts[script_index++];
    if (r.str != s.sha1) {
      why = "SCRIPT LOAD of " + s.name + " returned an unexpected SHA1";
      return false;
    }
  }
  return true;
}

}  // namespace

task<bool> connection::open(std::string& why) {
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

  if (!co_await connect_socket(why)) co_return false;
  if (tls_ && !co_await start_tls(why)) co_return false;
  co_return co_await send_preamble(why);
}

task<bool> connection::connect_socket(std::string& why) {
  const auto& server = settings_.server;
  error_code ec;
  auto endpoints = co_await resolver_.async_resolve(server.host, std::to_string(server.port), ec_out(ec));
  if (stopping_) co_return false;
  if (ec) {
    why = open_failure(open_guard_, "connect timeout (resolve)", "resolve", ec);
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
    why = open_failure(open_guard_, "connect timeout", "connect", ec);
    co_return false;
  }
  lowest().set_option(tcp::no_delay(true), ec);
  co_return true;
}

task<bool> connection::start_tls(std::string& why) {
  const auto& server = settings_.server;
  if (!SSL_set_tlsext_host_name(tls_->native_handle(), server.host.c_str())) {
    why = "TLS: cannot set the server name";
    co_return false;
  }
  tls_->set_verify_mode(ssl::verify_peer);
  tls_->set_verify_callback(ssl::host_name_verification(server.host));
  error_code ec;
  co_await tls_->async_handshake(ssl::stream_base::client, ec_out(ec));
  if (stopping_) co_return false;
  if (ec) {
    why = open_failure(open_guard_, "connect timeout (TLS)", "TLS handshake", ec);
    co_return false;
  }
  co_return true;
}

task<bool> connection::send_preamble(std::string& why) {
  const preamble p = make_preamble(settings_.server, scripts_);
  error_code ec;
  co_await write_all(p.batch, ec);
  if (stopping_) co_return false;
  if (ec) {
    why = open_failure(open_guard_, "connect timeout (preamble)", "write", ec);
    co_return false;
  }
  std::size_t answered = 0, script_index = 0;
  while (answered < p.what.size()) {
    std::optional<reply> r = parser_.next();
    if (r) {
      if (!preamble_reply_ok(p.what[answered++], *r, scripts_, script_index, why)) co_return false;
      continue;
    }
    if (parser_.failed()) {
      why = "protocol error: " + parser_.error();
      co_return false;
    }
    const std::size_t n = co_await read_some(ec);
    if (stopping_) co_return false;
    if (ec) {
      why = open_failure(open_guard_, "connect timeout (preamble)", "read", ec);
      co_return false;
    }
    parser_.feed(read_buffer_.data(), n);
  }
  co_return true;
}

}  // namespace sluice::redis
