// `sluice serve` under a service manager (packaging/sluice.service, Type=notify): the real binary
// tells $NOTIFY_SOCKET when it serves, when a reload starts and ends, and when it drains; one
// process ignores SIGHUP (systemd's ExecReload) instead of ending, as the signal's default would.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "process.hpp"
#include "serve_node.hpp"
#include "sim/server.hpp"
#include "test_client.hpp"

using namespace sluice;
using namespace std::chrono_literals;

namespace {

// The service manager's end: a datagram socket at a path, whose messages the test reads in order.
struct notify_listener {
  std::filesystem::path path;
  int fd = -1;
  std::vector<std::string> got;
  notify_listener() {
    path = std::filesystem::temp_directory_path() / ("sluice-sd-" + std::to_string(::getpid()) + "-" +
                                                    std::to_string(reinterpret_cast<std::uintptr_t>(this) % 100000));
    std::filesystem::remove(path);
    fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << std::strerror(errno);
  }
  ~notify_listener() {
    ::close(fd);
    std::filesystem::remove(path);
  }
  std::string env() const { return "NOTIFY_SOCKET=" + path.string(); }
  // True once `state` has arrived (messages before it stay in `got`).
  bool has(const std::string& state) {
    char buf[512];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT)) > 0;) got.emplace_back(buf, static_cast<std::size_t>(n));
    for (const auto& g : got)
      if (g == state) return true;
    return false;
  }
  bool await(const std::string& state) { return test::wait_until([&] { return has(state); }, 10000ms) < 10000ms; }
};

struct ServiceManager : ::testing::Test {
  std::unique_ptr<sim::server> sim;
  void SetUp() override {
    sim::options so;
    so.listen = "127.0.0.1:0";
    so.tokens = 4;
    so.token_delay = 1ms;
    sim = std::make_unique<sim::server>(so);
    ASSERT_TRUE(sim->start().has_value());
  }
  std::vector<std::string> args(const std::string& processes) const {
    return {"serve", "--listen", "127.0.0.1:0", "--threads", "1", "--processes", processes, "--upstream",
            "http://127.0.0.1:" + std::to_string(sim->port()), "--log-format", "json", "--drain-delay", "0s"};
  }
};

}  // namespace

TEST_F(ServiceManager, OneProcessSaysReadyAndStoppingAndSurvivesSighup) {
  notify_listener manager;
  test::serve_node gw(args("1"), {"OPENAI_API_KEY=sk-upstream-test", manager.env()});
  ASSERT_NE(gw.port, 0);
  // At once, before READY=1 can have come: the signals are caught from before the listener opens.
  ASSERT_EQ(::kill(gw.p.pid(), SIGHUP), 0);
  ASSERT_TRUE(manager.await("READY=1")) << gw.p.output();
  ASSERT_LT(test::wait_until([&] { return gw.logged("SIGHUP ignored"); }, 10000ms), 10000ms) << gw.p.output();
  EXPECT_EQ(test::post_chat(gw.port, true).result_int(), 200) << "the process serves on after SIGHUP";
  EXPECT_EQ(gw.p.signal_and_wait(SIGTERM), 0) << gw.p.output();
  EXPECT_TRUE(manager.has("STOPPING=1"));
}

TEST_F(ServiceManager, APodSaysReadyReloadingReadyAgainAndStopping) {
  notify_listener manager;
  test::serve_node pod(args("2"), {"OPENAI_API_KEY=sk-upstream-test", manager.env()});
  ASSERT_NE(pod.port, 0);
  pod.p.keep_reading();
  ASSERT_TRUE(manager.await("READY=1")) << pod.p.output();
  ASSERT_EQ(::kill(pod.p.pid(), SIGHUP), 0);
  ASSERT_TRUE(manager.await("RELOADING=1")) << pod.p.output();
  ASSERT_LT(test::wait_until([&] { return pod.logged("config reloaded"); }, 10000ms), 10000ms) << pod.p.output();
  ASSERT_TRUE(test::wait_until([&] { manager.has(""); return manager.got.size() >= 3; }, 10000ms) < 10000ms);
  EXPECT_EQ(manager.got[2], "READY=1") << "the new generation serves";
  EXPECT_EQ(pod.p.signal_and_wait(SIGTERM), 0) << pod.p.output();
  EXPECT_TRUE(manager.has("STOPPING=1"));
}
