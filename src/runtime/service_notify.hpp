// The service manager's readiness protocol (systemd's Type=notify): one datagram of KEY=VALUE lines
// to the unix socket named by $NOTIFY_SOCKET ("@name" is an abstract socket). READY=1 once the
// gateway serves, RELOADING=1 while a reload starts, STOPPING=1 when it drains. Without the
// variable it does nothing. Thread-safe: each call opens, sends and closes its own socket.
#pragma once

#include <string_view>

namespace sluice::runtime {

// Sends `state` (e.g. "READY=1") to $NOTIFY_SOCKET. True when it was sent; false when there is no
// such variable, it names no usable socket, or the send failed (a service manager that went away
// is no reason to stop serving: the caller goes on either way).
bool notify_service(std::string_view state) noexcept;

// The same to an explicit socket name (the variable's value): the seam the tests use.
bool notify_service_at(std::string_view socket_name, std::string_view state) noexcept;

}  // namespace sluice::runtime
