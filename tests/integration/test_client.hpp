// A small blocking HTTP client for integration tests: real sockets on 127.0.0.1, a receive timeout
// so a bug can fail a test but never hang it. Not for production use.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <sys/time.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>

namespace sluice::test {

namespace net = boost::asio;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;

struct client_socket {
  net::io_context ctx;
  tcp::socket sock{ctx};

  explicit client_socket(std::uint16_t port, int timeout_ms = 10000) {
    sock.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
    timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    ::setsockopt(sock.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sock.set_option(tcp::no_delay(true));
  }
  void send(std::string_view raw) { net::write(sock, net::buffer(raw.data(), raw.size())); }
  // Reads whatever arrives until the peer closes (or the timeout); returns the raw bytes.
  std::string read_all() {
    std::string out;
    char buf[8192];
    boost::system::error_code ec;
    while (true) {
      std::size_t n = sock.read_some(net::buffer(buf), ec);
      if (ec) break;
      out.append(buf, n);
    }
    return out;
  }
  void close() {
    boost::system::error_code ec;
    sock.shutdown(tcp::socket::shutdown_both, ec);
    sock.close(ec);
  }
};

inline std::string chat_body(bool stream, std::string extra = "") {
  return std::string(R"({"model":"sim-1","messages":[{"role":"user","content":"hello"}],"stream":)") +
         (stream ? "true" : "false") + extra + "}";
}

// One request on a fresh connection; the parsed response (body de-chunked).
inline bhttp::response<bhttp::string_body> call(std::uint16_t port, bhttp::verb method, std::string target,
                                                std::string body = {},
                                                std::vector<std::pair<std::string, std::string>> headers = {}) {
  client_socket c(port);
  bhttp::request<bhttp::string_body> req{method, target, 11};
  req.set(bhttp::field::host, "127.0.0.1");
  req.set(bhttp::field::content_type, "application/json");
  for (auto& [k, v] : headers) req.set(k, v);
  req.body() = std::move(body);
  req.prepare_payload();
  bhttp::write(c.sock, req);
  boost::beast::flat_buffer buf;
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(64 * 1024 * 1024);
  boost::system::error_code ec;
  bhttp::read(c.sock, buf, parser, ec);
  if (ec) {
    bhttp::response<bhttp::string_body> failed{bhttp::status::unknown, 11};
    failed.body() = "transport error: " + ec.message();
    return failed;
  }
  return parser.release();
}

inline bhttp::response<bhttp::string_body> post_chat(std::uint16_t port, bool stream,
                                                     std::vector<std::pair<std::string, std::string>> headers = {},
                                                     std::string path = "/v1/chat/completions") {
  return call(port, bhttp::verb::post, std::move(path), chat_body(stream), std::move(headers));
}

// Polls `pred` every millisecond until it holds or `limit` passes; returns the time it took
// (or limit + 1ms on failure). A condition is awaited, never a fixed sleep.
inline std::chrono::milliseconds wait_until(const std::function<bool()>& pred,
                                            std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
  auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < limit) {
    if (pred())
      return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return limit + std::chrono::milliseconds(1);
}

// A port on 127.0.0.1 where a connect is refused for as long as this object lives: a TCP socket
// bound there without SO_REUSEADDR and never listening. The port stays taken, so no listener
// bound later (the gateway's own, a simulator's) can be given it, as one closed after binding
// could be.
class refused_port {
 public:
  refused_port() : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in at{};
    at.sin_family = AF_INET;
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof at;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&at), len) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&at), &len) != 0)
      throw std::runtime_error("refused_port: no port to hold");
    port_ = ntohs(at.sin_port);
  }
  refused_port(const refused_port&) = delete;
  refused_port& operator=(const refused_port&) = delete;
  ~refused_port() { ::close(fd_); }
  std::uint16_t port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_;
  std::uint16_t port_ = 0;
};

}  // namespace sluice::test
