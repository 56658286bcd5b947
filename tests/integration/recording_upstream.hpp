// An upstream for tests that must see what the gateway sends and fix what it answers: one
// connection at a time, each request's head and body recorded, the answer made by a function of
// the request (the bytes of a whole HTTP response). Test-only; its own thread.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "test_client.hpp"

namespace sluice::test {

class recording_upstream {
 public:
  struct seen {
    std::string head;  // request line and headers, as sent
    std::string body;
    // The value of header `name` (case-insensitive), "" when absent.
    std::string header(const std::string& name) const {
      std::string lower_head = head;
      for (auto& c : lower_head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      std::string want = "\r\n" + name + ":";
      for (auto& c : want) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      const auto at = lower_head.find(want);
      if (at == std::string::npos) return "";
      auto b = at + want.size();
      while (b < head.size() && head[b] == ' ') ++b;
      return head.substr(b, head.find("\r\n", b) - b);
    }
  };
  using responder = std::function<std::string(const seen&)>;

  explicit recording_upstream(responder answer)
      : answer_(std::move(answer)), acceptor_(io_, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0)) {
    port_ = acceptor_.local_endpoint().port();
    thread_ = std::thread([this] { serve(); });
  }
  ~recording_upstream() {
    stop_ = true;
    boost::system::error_code ec;
    tcp::socket poke(io_);  // wakes the blocking accept
    poke.connect(acceptor_.local_endpoint(), ec);
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<seen> requests() const {
    std::lock_guard lock(mu_);
    return seen_;
  }

  // A whole response: status line, the given extra header lines, a body with its length.
  static std::string response(int status, const std::string& body, const std::string& headers = "",
                              const std::string& content_type = "application/json") {
    return "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Type: " + content_type + "\r\n" + headers +
           "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  }

 private:
  void serve() {
    while (!stop_) {
      boost::system::error_code ec;
      tcp::socket s(io_);
      acceptor_.accept(s, ec);
      if (ec || stop_) return;
      seen req;
      if (!read_request(s, req)) continue;
      {
        std::lock_guard lock(mu_);
        seen_.push_back(req);
      }
      net::write(s, net::buffer(answer_(req)), ec);
      s.shutdown(tcp::socket::shutdown_send, ec);
      char buf[256];
      s.read_some(net::buffer(buf), ec);  // until the gateway closes its side
    }
  }
  static bool read_request(tcp::socket& s, seen& out) {
    std::string got;
    char buf[4096];
    boost::system::error_code ec;
    while (true) {
      const auto end = got.find("\r\n\r\n");
      if (end != std::string::npos) {
        out.head = got.substr(0, end + 2);
        const auto cl = out.header("content-length");
        const std::size_t body = cl.empty() ? 0 : std::stoul(cl);
        if (got.size() >= end + 4 + body) {
          out.body = got.substr(end + 4, body);
          return true;
        }
      }
      const std::size_t n = s.read_some(net::buffer(buf), ec);
      if (ec) return false;
      got.append(buf, n);
    }
  }

  responder answer_;
  net::io_context io_;
  tcp::acceptor acceptor_;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  mutable std::mutex mu_;
  std::vector<seen> seen_;
};

}  // namespace sluice::test
