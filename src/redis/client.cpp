#include "redis/client.hpp"

#include <boost/asio/post.hpp>

#include <chrono>
#include <thread>

namespace sluice::redis {

client::client(runtime::loop_pool& pool, settings s, std::vector<script> scripts, ssl::context* tls)
    : pool_(pool), metrics_(std::make_shared<metrics>(scripts)), settings_(s), tls_(tls) {
  connections_.reserve(pool.size());
  for (std::size_t i = 0; i < pool.size(); ++i) {
    connections_.push_back(
        std::make_shared<connection>(pool.context(i).get_executor(), s, scripts, metrics_, tls));
  }
}

client::~client() = default;

std::shared_ptr<connection> client::add_subscriber(std::size_t thread) {
  auto c = std::make_shared<connection>(pool_.context(thread).get_executor(), settings_, std::vector<script>{}, nullptr, tls_);
  subscribers_.push_back(c);
  return c;
}

connection* client::current() noexcept {
  const std::size_t i = runtime::loop_pool::this_thread_index();
  // The index names a thread of some pool; it is this client's only if that thread runs this
  // pool's io_context (a test may run several pools in one process).
  if (i >= connections_.size() || !pool_.context(i).get_executor().running_in_this_thread()) return nullptr;
  return connections_[i].get();
}

bool client::wait_connected(duration limit) const {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (metrics_->connected_now() < static_cast<double>(connections_.size())) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

void client::start(runtime::task_group& owner) {
  // The connection's state belongs to its thread: start it there.
  for (auto& c : connections_) {
    net::post(c->executor(), [c, &owner] { c->start(owner); });
  }
  for (auto& c : subscribers_) {
    net::post(c->executor(), [c, &owner] { c->start(owner); });
  }
}

void client::stop() {
  for (auto& c : connections_) {
    net::post(c->executor(), [c] { c->stop(); });
  }
  for (auto& c : subscribers_) {
    net::post(c->executor(), [c] { c->stop(); });
  }
}

}  // namespace sluice::redis
