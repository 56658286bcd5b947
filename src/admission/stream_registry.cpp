#include "admission/stream_registry.hpp"

#include <algorithm>
#include <cassert>

#include <boost/asio/this_coro.hpp>

namespace sluice::admission {

stream_handle::stream_handle(stream_handle&& o) noexcept : owner_(o.owner_), entry_(o.entry_) {
  o.owner_ = nullptr;
  o.entry_ = nullptr;
}

stream_handle& stream_handle::operator=(stream_handle&& o) noexcept {
  if (this != &o) {
    reset();
    owner_ = o.owner_;
    entry_ = o.entry_;
    o.owner_ = nullptr;
    o.entry_ = nullptr;
  }
  return *this;
}

void stream_handle::reset() noexcept {
  if (entry_ != nullptr) owner_->remove(entry_);
  owner_ = nullptr;
  entry_ = nullptr;
}

stream_registry::~stream_registry() {
  // Every handle must be gone first: the handles point into us.
  assert(head_ == nullptr);
}

stream_handle stream_registry::add(std::function<void()> on_reset) {
  // Allocated outside the lock; the critical section only links it.
  auto* e = new detail::stream_entry;
  e->on_reset = std::move(on_reset);
  std::lock_guard lock(mu_);
  e->id = next_id_++;
  e->next = head_;
  if (head_ != nullptr) head_->prev = e;
  head_ = e;
  ++size_;
  return stream_handle(this, e);
}

void stream_registry::remove(detail::stream_entry* e) noexcept {
  {
    std::lock_guard lock(mu_);
    if (e->prev != nullptr) e->prev->next = e->next;
    else head_ = e->next;
    if (e->next != nullptr) e->next->prev = e->prev;
    --size_;
  }
  delete e;  // outside the lock: on_reset's captures may be heavy to destroy
}

std::size_t stream_registry::size() const {
  std::lock_guard lock(mu_);
  return size_;
}

std::uint64_t stream_registry::buffered_total() const {
  std::lock_guard lock(mu_);
  std::uint64_t sum = 0;
  for (auto* e = head_; e != nullptr; e = e->next) sum += e->buffered.load(std::memory_order_relaxed);
  return sum;
}

std::vector<std::pair<std::uint64_t, detail::stream_entry*>> stream_registry::top_locked(std::size_t max) const {
  // Read each count once: the relay keeps writing them while we sort.
  std::vector<std::pair<std::uint64_t, detail::stream_entry*>> keyed;
  keyed.reserve(size_);
  for (auto* e = head_; e != nullptr; e = e->next)
    if (!e->reset_requested.load(std::memory_order_relaxed))
      keyed.emplace_back(e->buffered.load(std::memory_order_relaxed), e);
  auto n = std::min(max, keyed.size());
  std::partial_sort(keyed.begin(), keyed.begin() + static_cast<std::ptrdiff_t>(n), keyed.end(),
                    [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second->id < b.second->id); });
  keyed.resize(n);
  return keyed;
}

std::vector<victim> stream_registry::select_victims(std::size_t max) const {
  std::lock_guard lock(mu_);
  std::vector<victim> out;
  for (auto [bytes, e] : top_locked(max)) out.push_back({e->id, bytes});
  return out;
}

std::vector<victim> stream_registry::reset_victims(std::size_t max) {
  std::lock_guard lock(mu_);
  std::vector<victim> out;
  for (auto [bytes, e] : top_locked(max)) {
    out.push_back({e->id, bytes});
    e->reset_requested.store(true, std::memory_order_release);
    if (e->on_reset) e->on_reset();
  }
  return out;
}

pressure_report pressure_tick(memory_budget& budget, stream_registry& streams, std::size_t max_resets) {
  pressure_report r;
  r.rss = budget.sample();
  r.saturated = budget.saturated();
  r.shedding = budget.over_shed_threshold();
  r.ready = budget.ready();
  if (r.saturated && max_resets > 0) r.reset = streams.reset_victims(max_resets);
  return r;
}

task<void> pressure_loop(memory_budget& budget, stream_registry& streams, std::size_t max_resets, duration interval,
                         std::function<void(const pressure_report&)> on_tick) {
  // Cancellation ends the loop quietly, also when it lands after the timer has already fired
  // (the wait then succeeds; a further co_await would throw operation_aborted).
  co_await net::this_coro::throw_if_cancelled(false);
  net::steady_timer timer(co_await net::this_coro::executor);
  for (;;) {
    auto report = pressure_tick(budget, streams, max_resets);
    if (on_tick) on_tick(report);
    timer.expires_after(interval);
    error_code ec;
    co_await timer.async_wait(ec_out(ec));
    const auto cancelled = (co_await net::this_coro::cancellation_state).cancelled();
    if (ec || cancelled != net::cancellation_type::none) co_return;  // the owner is shutting down
  }
}

}  // namespace sluice::admission
