#include "runtime/service_notify.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>

#include "runtime/unique_fd.hpp"

namespace sluice::runtime {

bool notify_service(std::string_view state) noexcept {
  const char* name = std::getenv("NOTIFY_SOCKET");
  if (name == nullptr) return false;
  return notify_service_at(name, state);
}

bool notify_service_at(std::string_view socket_name, std::string_view state) noexcept {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  // A path, or "@name" for the abstract namespace (a leading NUL byte instead of the '@').
  if (socket_name.size() < 2 || socket_name.size() >= sizeof addr.sun_path) return false;
  if (socket_name.front() != '/' && socket_name.front() != '@') return false;
  std::memcpy(addr.sun_path, socket_name.data(), socket_name.size());
  if (socket_name.front() == '@') addr.sun_path[0] = '\0';
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + socket_name.size() +
                                          (socket_name.front() == '@' ? 0 : 1));
  const unique_fd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd) return false;
  const auto sent = ::sendto(fd.get(), state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&addr), len);
  return sent == static_cast<ssize_t>(state.size());
}

}  // namespace sluice::runtime
