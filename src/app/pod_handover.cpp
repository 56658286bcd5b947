#include "app/pod_handover.hpp"

#include <unistd.h>

#include <boost/asio/posix/stream_descriptor.hpp>

#include "runtime/handover.hpp"

namespace sluice::app {

std::optional<std::size_t> pod_handover::holder(std::string_view id) const {
  const auto row = pod_.pod->responses.holder(id);
  if (!row || *row == pod_.row || *row >= pod_state::max_workers) return std::nullopt;
  // A row whose worker has ended holds nothing any more (its store went with it).
  if (pod_.pod->workers[*row].pid.load(std::memory_order_acquire) == 0) return std::nullopt;
  return *row;
}

bool pod_handover::hand_over(std::size_t row, int fd, std::string_view bytes) const {
  const bool sent = pod_.mesh != nullptr && pod_.mesh->send(row, fd, bytes);
  (sent ? pod_.pod->handovers_sent : pod_.pod->handovers_failed).fetch_add(1, std::memory_order_relaxed);
  return sent;
}

void pod_handover::indexed(std::string_view id, bool stored) const noexcept {
  const auto row = static_cast<std::uint32_t>(pod_.row);
  if (!stored) pod_.pod->responses.remove(id, row);
  else if (!pod_.pod->responses.add(id, row)) pod_.pod->responses_unindexed.fetch_add(1, std::memory_order_relaxed);
}

task<void> receive_handovers(int inbox, std::vector<http::server*> servers) {
  net::posix::stream_descriptor in(co_await net::this_coro::executor, ::dup(inbox));
  std::size_t next = 0;
  for (;;) {
    error_code ec;
    co_await in.async_wait(net::posix::stream_descriptor::wait_read, ec_out(ec));
    if (ec) co_return;
    while (auto m = runtime::handover_mesh::receive(inbox)) {
      servers[next]->serve_handed(m->fd, std::move(m->bytes));
      next = (next + 1) % servers.size();
    }
  }
}

}  // namespace sluice::app
