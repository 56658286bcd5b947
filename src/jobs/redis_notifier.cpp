#include "jobs/redis_notifier.hpp"

#include "observability/log.hpp"

namespace sluice::jobs {

namespace {
// How often the loop looks for a reconnect (then subscribes again).
constexpr auto recheck = std::chrono::milliseconds(50);
}  // namespace

redis_notifier::redis_notifier(std::shared_ptr<redis::connection> conn, std::vector<std::string> channels)
    : conn_(std::move(conn)), channels_(std::move(channels)) {
  conn_->on_message([this](std::string_view, std::string_view payload) { deliver(payload); });
}

void redis_notifier::start(runtime::task_group& group) { group.spawn(conn_->executor(), loop(), "redis notifier", true); }

redis_notifier::watch redis_notifier::watch_topic(std::string topic, wakeup::handle h) {
  std::lock_guard l(mu_);
  const std::uint64_t id = ++next_id_;
  watches_[topic].emplace_back(id, std::move(h));
  return watch(this, std::move(topic), id);
}

void redis_notifier::unwatch(const std::string& topic, std::uint64_t id) {
  std::lock_guard l(mu_);
  auto it = watches_.find(topic);
  if (it == watches_.end()) return;
  std::erase_if(it->second, [id](const auto& w) { return w.first == id; });
  if (it->second.empty()) watches_.erase(it);
}

void redis_notifier::deliver(std::string_view payload) {
  std::lock_guard l(mu_);
  auto it = watches_.find(std::string(payload));
  if (it == watches_.end()) return;
  for (const auto& [id, h] : it->second) h.notify();
}

void redis_notifier::wake_all() {
  std::lock_guard l(mu_);
  for (const auto& [topic, list] : watches_)
    for (const auto& [id, h] : list) h.notify();
}

task<void> redis_notifier::loop() {
  net::steady_timer pause(co_await net::this_coro::executor);
  std::uint64_t subscribed_on = 0;  // the connect (connection::connects) the subscriptions belong to
  for (;;) {
    auto cs = co_await net::this_coro::cancellation_state;
    if (cs.cancelled() != net::cancellation_type::none) co_return;
    if (!conn_->connected()) {
      if (live_.exchange(false, std::memory_order_relaxed)) wake_all();  // waiters fall back to polling
    } else if (conn_->connects() != subscribed_on) {
      const std::uint64_t on = conn_->connects();
      bool all = true;
      for (const auto& ch : channels_) {  // one channel per command: each has its one reply
        auto r = co_await conn_->command("SUBSCRIBE", ch);
        if (!r.ok()) {
          all = false;
          break;
        }
      }
      if (all && conn_->connects() == on) {
        subscribed_on = on;
        live_.store(true, std::memory_order_relaxed);
        // What happened while no one listened: every waiter reads once more.
        wake_all();
      } else {
        obs::log_warn("redis notifier: subscribe failed; waiters poll until it succeeds", {});
      }
    }
    pause.expires_after(recheck);
    error_code ec;
    co_await pause.async_wait(ec_out(ec));
  }
}

}  // namespace sluice::jobs
