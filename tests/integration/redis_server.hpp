// A real redis-server as a child process for integration tests: started on a free loopback port
// with persistence off, paused (SIGSTOP) and resumed, killed and restarted on the same port.
// Test-only.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace sluice::test {

inline constexpr const char* redis_server_binary = "/usr/bin/redis-server";

// A port nobody listens on right now (bound, read back, closed).
inline std::uint16_t free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  std::uint16_t port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);
  return port;
}

class redis_server {
 public:
  // `extra` are more redis-server arguments, e.g. {"--requirepass", "pw"}. With `tls`, the port
  // speaks TLS only (`extra` then names the certificate files).
  explicit redis_server(std::vector<std::string> extra = {}, bool tls = false)
      : port_(free_loopback_port()), extra_(std::move(extra)), tls_(tls) {
    start();
  }
  ~redis_server() { kill(); }
  redis_server(const redis_server&) = delete;
  redis_server& operator=(const redis_server&) = delete;

  std::uint16_t port() const noexcept { return port_; }
  bool running() const noexcept { return pid_ > 0; }

  // Starts (again) on the same port; true once it accepts connections.
  bool start() {
    if (pid_ > 0) return true;
    std::vector<std::string> args{redis_server_binary, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                                  "--daemonize", "no", "--loglevel", "warning", "--enable-debug-command", "yes"};
    if (tls_) {
      args.insert(args.end(), {"--port", "0", "--tls-port", std::to_string(port_)});
    } else {
      args.insert(args.end(), {"--port", std::to_string(port_)});
    }
    args.insert(args.end(), extra_.begin(), extra_.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    if (posix_spawn(&pid_, redis_server_binary, &fa, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
    return pid_ > 0 && wait_ready();
  }
  // SIGKILL and reap: the kernel closes its sockets (the client sees a reset or EOF at once).
  void kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  void pause() { ::kill(pid_, SIGSTOP); }
  void resume() { ::kill(pid_, SIGCONT); }

 private:
  bool wait_ready() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a.sin_port = htons(port_);
      const bool up = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
      ::close(fd);
      if (up) return true;
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {  // exited: bad arguments or a taken port
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

  std::uint16_t port_;
  std::vector<std::string> extra_;
  bool tls_ = false;
  pid_t pid_ = -1;
};

}  // namespace sluice::test
