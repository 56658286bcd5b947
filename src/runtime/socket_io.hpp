// Small socket helpers shared by the downstream server (http/) and the upstream client (upstream/):
// a non-blocking send tried before an asynchronous write, and a message head as bytes.
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <string>
#include <string_view>

#include <boost/beast/http/message.hpp>

#include "runtime/asio.hpp"

namespace sluice::runtime {

// One non-blocking sendmsg (MSG_DONTWAIT, outside the reactor) of as much of `prefix` and then
// `buffers` as the socket takes now: the usual case for a peer that reads, with no trip through
// the event loop. Returns the bytes sent; 0 when the socket is full. `failed` is set (errno) when
// the socket has an error, for a caller that wants it; the asynchronous write that follows would
// report it as well.
template <class Buffers>
std::size_t send_now(tcp::socket& socket, std::string_view prefix, const Buffers& buffers, int* failed = nullptr) noexcept {
  constexpr std::size_t max_iov = 16;
  ::iovec iov[max_iov];
  std::size_t count = 0;
  if (!prefix.empty()) {
    iov[0].iov_base = const_cast<char*>(prefix.data());
    iov[0].iov_len = prefix.size();
    count = 1;
  }
  for (auto it = net::buffer_sequence_begin(buffers); it != net::buffer_sequence_end(buffers) && count < max_iov; ++it) {
    net::const_buffer b(*it);
    if (b.size() == 0) continue;
    iov[count].iov_base = const_cast<void*>(b.data());
    iov[count].iov_len = b.size();
    ++count;
  }
  ::msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = count;
  const ssize_t n = ::sendmsg(socket.native_handle(), &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
  if (n < 0 && failed && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) *failed = errno;
  return n > 0 ? static_cast<std::size_t>(n) : 0;
}

// The head of a message (start line, fields, blank line) as bytes, exactly as Beast's serializer
// writes it, without its buffer-sequence machinery (a few hundred bytes appended in one pass).
template <bool isRequest, class Fields>
std::string head_bytes(const boost::beast::http::header<isRequest, Fields>& h) {
  std::string out;
  out.reserve(256);
  auto version = [&] {
    out += "HTTP/";
    out += static_cast<char>('0' + h.version() / 10);
    out += '.';
    out += static_cast<char>('0' + h.version() % 10);
  };
  if constexpr (isRequest) {
    out += h.method_string();
    out += ' ';
    out += h.target();
    out += ' ';
    version();
  } else {
    version();
    const unsigned code = h.result_int();
    out += ' ';
    out += static_cast<char>('0' + code / 100 % 10);
    out += static_cast<char>('0' + code / 10 % 10);
    out += static_cast<char>('0' + code % 10);
    out += ' ';
    out += h.reason();
  }
  out += "\r\n";
  for (const auto& f : h) {
    out += f.name_string();
    out += ": ";
    out += f.value();
    out += "\r\n";
  }
  out += "\r\n";
  return out;
}

}  // namespace sluice::runtime
