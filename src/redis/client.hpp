// redis::client: one redis::connection per worker thread (each on its thread's io_context), the
// scripts they all load, and the metrics they share. Built and started on the main thread; each
// worker uses only its own connection (`on(worker)`), so no command crosses threads.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "redis/connection.hpp"
#include "runtime/task_group.hpp"
#include "runtime/loop_pool.hpp"

namespace sluice::redis {

class client {
 public:
  // `tls` is needed for rediss:// and must outlive the client.
  client(runtime::loop_pool& pool, settings s, std::vector<script> scripts, ssl::context* tls = nullptr);
  ~client();
  client(const client&) = delete;
  client& operator=(const client&) = delete;

  // Starts every connection's loop as a task of `owner` (which must outlive them).
  void start(runtime::task_group& owner);
  // Stops every connection on its own thread (posted); callable from any thread. Idempotent.
  void stop();

  // The connection of worker `i`: use it only from that worker's thread.
  connection& on(std::size_t i) noexcept { return *connections_[i]; }
  // The connection of the pool thread the caller runs on; null on any other thread (then post to
  // one: on(0).executor()).
  connection* current() noexcept;
  std::size_t size() const noexcept { return connections_.size(); }
  // Blocks the calling (controlling) thread until every connection is up or `limit` passed; true
  // when they all are. For start-up, so that the first requests find Redis ready.
  bool wait_connected(duration limit) const;
  // A connection of its own on worker `thread` for SUBSCRIBE (connection::on_message), no scripts
  // and not in the metrics' connected count; started and stopped with the others. Before start().
  std::shared_ptr<connection> add_subscriber(std::size_t thread);
  // For obs::metrics_registry::add_collectable.
  std::shared_ptr<const metrics> metrics_collectable() const noexcept { return metrics_; }

 private:
  runtime::loop_pool& pool_;
  std::shared_ptr<metrics> metrics_;
  std::vector<std::shared_ptr<connection>> connections_;
  std::vector<std::shared_ptr<connection>> subscribers_;
  settings settings_;
  ssl::context* tls_ = nullptr;
};

}  // namespace sluice::redis
