// Runs the real `sluice` binary as a child process for integration tests: start it, learn its port
// from its "listening on" line, signal it, and collect its output and exit status. Test-only.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>
#include <regex>
#include <string>
#include <vector>

extern char** environ;

namespace sluice::test {

// A file under /tmp holding `text` (a keys file, a config file), for a child process to read; the
// caller unlinks it.
inline std::string temp_file_with(const std::string& text) {
  char path[] = "/tmp/sluice-test-XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) return {};
  const bool whole = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return whole ? std::string(path) : std::string();
}

// A /proc/PID/status value in KiB ("VmHWM", "VmRSS"), 0 when absent.
inline std::uint64_t proc_status_kib(int pid, const std::string& key) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key + ":", 0) == 0) return std::stoull(line.substr(key.size() + 1));
  return 0;
}

class child_process {
 public:
  // Starts `SLUICE_BINARY args...` with `extra_env` ("NAME=value") added to the environment.
  child_process(std::vector<std::string> args, std::vector<std::string> extra_env = {}) {
    int fds[2];
    if (::pipe(fds) != 0) return;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    std::vector<std::string> argv_s{SLUICE_BINARY};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_s;
    for (char** e = environ; *e; ++e) env_s.emplace_back(*e);
    env_s.insert(env_s.end(), extra_env.begin(), extra_env.end());
    std::vector<char*> envp;
    for (auto& e : env_s) envp.push_back(e.data());
    envp.push_back(nullptr);
    if (posix_spawn(&pid_, SLUICE_BINARY, &fa, nullptr, argv.data(), envp.data()) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
    ::close(fds[1]);
    out_fd_ = fds[0];
    ::fcntl(out_fd_, F_SETFL, O_NONBLOCK);
  }
  ~child_process() {
    stop_reading_ = true;
    if (reader_.joinable()) reader_.join();
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (out_fd_ >= 0) ::close(out_fd_);
  }

  int pid() const { return pid_; }
  // What the child wrote so far (a copy: keep_reading() may be appending).
  std::string output() const {
    std::lock_guard lock(mu_);
    return output_;
  }
  // Reads the child's output on a thread of its own from now on, so a child that logs a lot never
  // blocks on a full pipe while the test waits on something else (a pod of worker processes).
  void keep_reading() {
    if (reader_.joinable()) return;
    reader_ = std::thread([this] {
      while (!stop_reading_) pump(20);
    });
  }

  // Reads output until "listening on HOST:PORT" appears (or the deadline); returns the port.
  std::optional<std::uint16_t> wait_port(std::chrono::milliseconds limit = std::chrono::seconds(20)) {
    static const std::regex re("listening on [0-9.]+:([0-9]+)");
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      pump(50);
      std::smatch m;
      const std::string out = output();
      if (std::regex_search(out, m, re)) return static_cast<std::uint16_t>(std::stoi(m[1].str()));
    }
    return std::nullopt;
  }

  // Sends `sig` and waits (reading output) for the exit; returns the exit code, or -1.
  int signal_and_wait(int sig, std::chrono::milliseconds limit = std::chrono::seconds(30)) {
    ::kill(pid_, sig);
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      pump(20);
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        pump(0);
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
    }
    return -1;
  }

  void pump(int timeout_ms) {
    pollfd p{out_fd_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return;
    char buf[4096];
    ssize_t n;
    std::lock_guard lock(mu_);
    while ((n = ::read(out_fd_, buf, sizeof buf)) > 0) output_.append(buf, static_cast<std::size_t>(n));
  }

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  bool exited_ = false;
  mutable std::mutex mu_;
  std::string output_;
  std::thread reader_;
  std::atomic<bool> stop_reading_{false};
};

}  // namespace sluice::test
