// The pod's handover of client connections between worker processes (docs/processes.md), for the
// in-process store (`--queue memory`): each worker indexes the responses its store holds in the
// pod's shared segment (jobs::pod_response_index); a GET, cancel or resume of a response another
// live worker holds hands the client's connection to that worker (runtime::handover_mesh), whose
// receive loop serves it on one of its threads as if it had accepted it.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

#include "app/pod.hpp"
#include "http/server.hpp"
#include "proxy/services.hpp"
#include "runtime/asio.hpp"

namespace sluice::app {

class pod_handover final : public proxy::response_handover {
 public:
  explicit pod_handover(pod_link pod) : pod_(pod) {}
  std::optional<std::size_t> holder(std::string_view id) const override;
  bool hand_over(std::size_t row, int fd, std::string_view bytes) const override;
  // What the store tells its index (jobs::memory_store::set_index).
  void indexed(std::string_view id, bool stored) const noexcept;

 private:
  pod_link pod_;
};

// Takes each connection handed to this worker from its inbox and gives it to the next of `servers`
// in turn, until cancelled.
task<void> receive_handovers(int inbox, std::vector<http::server*> servers);

}  // namespace sluice::app
