// Helpers shared by the admission unit tests: a manual clock, a fake RSS source and coroutines
// that record an acquire() outcome. Single-threaded unless a test says otherwise.
#pragma once

#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <optional>

#include <boost/asio/co_spawn.hpp>

#include "admission/controller.hpp"

namespace sluice::admission::testing {

// A steady_clock time that only moves when the test says so.
struct manual_clock {
  std::shared_ptr<std::atomic<std::int64_t>> ns = std::make_shared<std::atomic<std::int64_t>>(1'000'000'000'000);
  std::chrono::steady_clock::time_point now() const {
    return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(ns->load()));
  }
  void advance(duration d) const { ns->fetch_add(d.count()); }
  std::function<std::chrono::steady_clock::time_point()> fn() const {
    return [n = ns] { return std::chrono::steady_clock::time_point(std::chrono::nanoseconds(n->load())); };
  }
};

// RSS the test sets by hand.
struct fake_rss {
  std::shared_ptr<std::atomic<std::size_t>> value = std::make_shared<std::atomic<std::size_t>>(0);
  void set(std::size_t v) const { value->store(v); }
  memory_budget::rss_source fn() const {
    return [v = value] { return v->load(); };
  }
};

// Where a spawned acquire() leaves its outcome.
struct outcome {
  std::optional<acquire_result> result;
  bool done() const { return result.has_value(); }
  bool granted() const { return result && std::holds_alternative<permit>(*result); }
  permit& the_permit() { return std::get<permit>(*result); }
  const refused& refusal() const { return std::get<refused>(*result); }
};

inline task<void> acquire_into(controller* c, std::uint64_t bytes, std::shared_ptr<outcome> out,
                               net::cancellation_slot withdraw = {}, queue_lane lane = {}) {
  out->result = co_await c->acquire(bytes, withdraw, lane);
}

// Rethrows a spawned coroutine's exception out of io_context::run(), failing the test.
inline void rethrow(std::exception_ptr e) {
  if (e) std::rethrow_exception(e);
}

inline std::shared_ptr<outcome> spawn_acquire(net::io_context& ctx, controller& c, std::uint64_t bytes = 0,
                                              net::cancellation_slot withdraw = {}, queue_lane lane = {}) {
  auto out = std::make_shared<outcome>();
  net::co_spawn(ctx, acquire_into(&c, bytes, out, withdraw, lane), rethrow);
  return out;
}

// A request of lane `lane` (a client key), with nothing else special.
inline std::shared_ptr<outcome> spawn_in_lane(net::io_context& ctx, controller& c, queue_lane lane) {
  return spawn_acquire(ctx, c, 0, {}, lane);
}

}  // namespace sluice::admission::testing
