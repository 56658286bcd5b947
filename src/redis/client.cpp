#include "redis/client.hpp"

#include <boost/asio/post.hpp>

namespace sluice::redis {

client::client(runtime::worker_pool& pool, settings s, std::vector<script> scripts, ssl::context* tls)
    : metrics_(std::make_shared<metrics>(scripts)) {
  connections_.reserve(pool.size());
  for (std::size_t i = 0; i < pool.size(); ++i) {
    connections_.push_back(
        std::make_shared<connection>(pool.context(i).get_executor(), s, scripts, metrics_, tls));
  }
}

client::~client() = default;

void client::start(runtime::task_group& owner) {
  // The connection's state belongs to its thread: start it there.
  for (auto& c : connections_) {
    net::post(c->executor(), [c, &owner] { c->start(owner); });
  }
}

void client::stop() {
  for (auto& c : connections_) {
    net::post(c->executor(), [c] { c->stop(); });
  }
}

}  // namespace sluice::redis
