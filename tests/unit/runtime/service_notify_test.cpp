#include "runtime/service_notify.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

namespace {

// A datagram socket bound where a service manager would listen; `name` as $NOTIFY_SOCKET spells it.
struct manager_socket {
  int fd = -1;
  explicit manager_socket(const std::string& name) {
    fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, name.data(), name.size());
    socklen_t len = offsetof(sockaddr_un, sun_path) + name.size();
    if (name.front() == '@') addr.sun_path[0] = '\0';
    else len += 1;
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), len), 0) << std::strerror(errno);
  }
  ~manager_socket() { ::close(fd); }
  std::string receive() const {
    char buf[256];
    auto n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    return n < 0 ? std::string("<nothing>") : std::string(buf, static_cast<std::size_t>(n));
  }
};

}  // namespace

TEST(ServiceNotify, SendsTheStateToAPathSocket) {
  auto path = std::filesystem::temp_directory_path() / ("sluice-notify-" + std::to_string(::getpid()));
  std::filesystem::remove(path);
  manager_socket manager(path.string());
  ASSERT_TRUE(sluice::runtime::notify_service_at(path.string(), "READY=1"));
  EXPECT_EQ(manager.receive(), "READY=1");
  std::filesystem::remove(path);
}

TEST(ServiceNotify, SendsToAnAbstractSocketNamedWithAnAt) {
  const std::string name = "@sluice-notify-test-" + std::to_string(::getpid());
  manager_socket manager(name);
  ::setenv("NOTIFY_SOCKET", name.c_str(), 1);
  EXPECT_TRUE(sluice::runtime::notify_service("STOPPING=1"));
  ::unsetenv("NOTIFY_SOCKET");
  EXPECT_EQ(manager.receive(), "STOPPING=1");
}

TEST(ServiceNotify, WithoutAManagerNothingIsSentAndNothingFails) {
  ::unsetenv("NOTIFY_SOCKET");
  EXPECT_FALSE(sluice::runtime::notify_service("READY=1"));
  EXPECT_FALSE(sluice::runtime::notify_service_at("relative/path", "READY=1"));
  EXPECT_FALSE(sluice::runtime::notify_service_at("@", "READY=1"));
  EXPECT_FALSE(sluice::runtime::notify_service_at("/nonexistent/dir/socket", "READY=1"));
  EXPECT_FALSE(sluice::runtime::notify_service_at("/" + std::string(200, 'x'), "READY=1"));
}
