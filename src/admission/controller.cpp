#include "admission/controller.hpp"
#include "admission/controller_waiter.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>

namespace sluice::admission {
namespace {

// Before any permit has been released we know nothing about how long streams last; LLM
// completions typically stream for seconds to tens of seconds.
constexpr auto initial_hold_estimate = std::chrono::seconds(10);
// Weight of the newest hold time in the EWMA: about the last 10-20 releases dominate.
constexpr double hold_alpha = 0.1;
constexpr std::int64_t min_retry_s = 1;
constexpr std::int64_t max_retry_s = 60;
// Buckets of the lane index: enough for one lane per client key of any sensible keys file (lanes
// beyond that share chains; there are never more lanes than queue_depth).
constexpr std::size_t max_lane_buckets = 4096;

}  // namespace

std::string_view to_string(refusal r) noexcept {
  switch (r) {
    case refusal::queue_full: return "queue_full";
    case refusal::queue_timeout: return "queue_timeout";
    case refusal::memory: return "memory";
    case refusal::draining: return "draining";
    case refusal::cancelled: return "cancelled";
    case refusal::key_queue_full: return "key_queue_full";
  }
  return "queue_full";
}

// ---- permit -----------------------------------------------------------------------------------

permit::permit(permit&& o) noexcept
    : owner_(std::exchange(o.owner_, nullptr)), bytes_(std::move(o.bytes_)), granted_at_(o.granted_at_) {}

permit& permit::operator=(permit&& o) noexcept {
  if (this != &o) {
    reset();
    owner_ = std::exchange(o.owner_, nullptr);
    bytes_ = std::move(o.bytes_);
    granted_at_ = o.granted_at_;
  }
  return *this;
}

void permit::reset() noexcept {
  if (owner_ == nullptr) return;
  // Bytes first: the waiter woken by the slot may need exactly these bytes.
  bytes_.reset();
  std::exchange(owner_, nullptr)->release(granted_at_);
}

// ---- lane and waiter --------------------------------------------------------------------------

// (controller::lane and controller::waiter: controller_waiter.hpp.)

void controller::waiter::finish() {
  timer.cancel();
  // Detach from the slots before resuming the coroutine, which may reuse its slot right away.
  if (own_slot.is_connected()) own_slot.clear();
  if (withdraw_slot.is_connected()) withdraw_slot.clear();

  acquire_result result;
  switch (st) {
    case wait_state::granted:
      delivered = true;
      result = owner->make_permit(std::move(reservation), granted_at);
      owner->admitted_.fetch_add(1, std::memory_order_relaxed);
      if (owner->observers_.on_admitted) owner->observers_.on_admitted(granted_at - enqueued);
      break;
    case wait_state::timed_out: result = owner->make_refusal(refusal::queue_timeout, owner->queued() + 1); break;
    case wait_state::cancelled: result = owner->make_refusal(refusal::cancelled, 0); break;
    case wait_state::drained: result = owner->make_refusal(refusal::draining, 0); break;
    case wait_state::full: result = owner->make_refusal(refusal::queue_full, owner->queue_depth_ + 1); break;
    case wait_state::key_full: result = owner->make_refusal(refusal::key_queue_full, owner->lanes()); break;
    case wait_state::waiting: assert(false && "finish() on a waiter still in the queue"); break;
  }
  auto h = std::move(handler);
  auto keep_running = std::move(work);  // released after the handler has run
  h->complete(std::move(result));
}

// ---- controller -------------------------------------------------------------------------------

controller::controller(const options& opts, memory_budget& budget, now_fn now, std::unique_ptr<slot_ledger> slots)
    : max_streams_(std::max<std::uint64_t>(opts.max_streams, 1)),
      queue_depth_(opts.queue_depth),
      queue_per_key_(opts.queue_per_key),
      queue_timeout_(opts.queue_timeout),
      budget_(budget),
      now_(now ? std::move(now) : now_fn([] { return clock::now(); })),
      slots_(slots ? std::move(slots) : std::make_unique<local_slots>()),
      buckets_(std::bit_ceil(std::clamp<std::uint64_t>(opts.queue_depth, 1, max_lane_buckets)), nullptr),
      mean_hold_ns_(std::chrono::duration_cast<std::chrono::nanoseconds>(initial_hold_estimate).count()) {}

controller::~controller() {
  // Permits and waiters point at us: the owner drains and lets them finish first.
  assert(cursor_ == nullptr);
  assert(in_use_.load() == 0);
}

std::chrono::seconds controller::retry_after_for(std::uint64_t position) const noexcept {
  // Little's law: with every slot busy, slots free up at max_streams / mean hold time.
  double hold_s = static_cast<double>(mean_hold_ns_.load(std::memory_order_relaxed)) / 1e9;
  double wait_s = static_cast<double>(std::max<std::uint64_t>(position, 1)) * hold_s / static_cast<double>(max_streams_);
  double secs = std::ceil(std::min(wait_s, static_cast<double>(max_retry_s)));
  return std::chrono::seconds(std::clamp(static_cast<std::int64_t>(secs), min_retry_s, max_retry_s));
}

refused controller::make_refusal(refusal why, std::uint64_t position) {
  refused_[static_cast<std::size_t>(why)].fetch_add(1, std::memory_order_relaxed);
  // Draining: this instance is going away, so a prompt retry lands on another one.
  if (why == refusal::draining || why == refusal::cancelled) return {why, std::chrono::seconds(min_retry_s)};
  return {why, retry_after_for(position)};
}

std::optional<memory_budget::reservation> controller::try_grant_locked(std::uint64_t bytes) {
  // Only when nobody is queued, in any lane: a newcomer must not overtake the waiters.
  if (cursor_ != nullptr || !take_slot_locked()) return std::nullopt;
  auto r = budget_.try_reserve(bytes);
  if (!r) {
    give_slot_locked();
    return std::nullopt;
  }
  in_use_.fetch_add(1, std::memory_order_relaxed);
  return r;
}

bool controller::take_slot_locked() noexcept {
  return slots_->try_take(in_use_.load(std::memory_order_relaxed), max_streams_);
}

void controller::give_slot_locked() noexcept {
  slots_->give_back();
}

void controller::regrant() {
  if (queued_.load(std::memory_order_relaxed) == 0) return;
  waiter* list = nullptr;
  {
    std::lock_guard lock(mu_);
    list = grant_waiters_locked(now_());
  }
  wake(list);
}

controller::wait_state controller::room_locked(const void* id) const noexcept {
  // The anonymous lane has no cap of its own: without keys, the queue is today's one FIFO.
  if (id != nullptr && queue_per_key_ != 0) {
    if (const lane* l = find_lane_locked(id); l != nullptr && l->count >= queue_per_key_) return wait_state::key_full;
  }
  const std::uint64_t waiting = slots_->waiting(queued_.load(std::memory_order_relaxed));
  if (waiting >= queue_depth_) return wait_state::full;
  return wait_state::waiting;
}

controller::waiter* controller::grant_waiters_locked(clock::time_point now) {
  waiter* list = nullptr;
  waiter** tail = &list;
  while (cursor_ != nullptr && take_slot_locked()) {
    // The oldest waiter of the lane whose turn it is. If its bytes do not fit, everyone waits
    // (the cursor stays on its lane), so a large request cannot be starved by small ones.
    lane* l = cursor_;
    waiter* w = l->head;
    auto r = budget_.try_reserve(w->bytes);
    if (!r) {
      give_slot_locked();
      break;
    }
    cursor_ = l->next;  // the next lane's turn; fixed up by unlink_locked if `l` empties or moves
    unlink_locked(l, w);
    w->st = wait_state::granted;
    w->reservation = std::move(*r);
    w->granted_at = now;
    in_use_.fetch_add(1, std::memory_order_relaxed);
    assert(in_use_.load(std::memory_order_relaxed) <= max_streams_);
    w->wake_next = nullptr;
    *tail = w;
    tail = &w->wake_next;
  }
  return list;
}

void controller::wake(waiter* list) {
  while (list != nullptr) {
    waiter* next = list->wake_next;
    // The completion owns the waiter from here; it runs on the waiter's own executor because
    // timers, slots and the coroutine all belong to that thread.
    std::shared_ptr<waiter> self = std::move(list->queue_ref);
    auto ex = self->ex;
    net::post(ex, [self = std::move(self)] { self->finish(); });
    list = next;
  }
}

void controller::release(permit::time_point granted_at) noexcept {
  auto now = now_();
  waiter* list = nullptr;
  {
    std::lock_guard lock(mu_);
    in_use_.fetch_sub(1, std::memory_order_relaxed);
    give_slot_locked();
    note_hold_time_locked(now - granted_at);
    list = grant_waiters_locked(now);
  }
  wake(list);
}

void controller::note_hold_time_locked(duration held) noexcept {
  auto held_ns = static_cast<double>(std::max<std::int64_t>(held.count(), 0));
  double mean = static_cast<double>(mean_hold_ns_.load(std::memory_order_relaxed));
  double next = hold_seeded_ ? mean + hold_alpha * (held_ns - mean) : held_ns;
  hold_seeded_ = true;
  mean_hold_ns_.store(static_cast<std::int64_t>(next), std::memory_order_relaxed);
}

void controller::set_draining(bool on) {
  waiter* list = nullptr;
  waiter** tail = &list;
  {
    std::lock_guard lock(mu_);
    draining_.store(on, std::memory_order_relaxed);
    if (on) {
      while (cursor_ != nullptr) {
        waiter* w = cursor_->head;
        unlink_locked(cursor_, w);
        w->st = wait_state::drained;
        w->wake_next = nullptr;
        *tail = w;
        tail = &w->wake_next;
      }
    }
  }
  wake(list);
}

void controller::withdraw(const std::shared_ptr<waiter>& w, wait_state why) {
  auto now = now_();
  {
    std::lock_guard lock(mu_);
    // Already granted or drained: that completion is on its way and wins the race.
    if (w->st != wait_state::waiting) return;
    unlink_locked(find_lane_locked(w->lane_id), w.get());
    w->st = why;
    // If `w` was next in turn and blocked on memory, the next waiter may fit now.
    w->wake_next = grant_waiters_locked(now);
  }
  wake(w.get());
}

// The async part of acquire(): runs inside the suspended coroutine, on its executor.
struct controller::initiate_wait {
  controller* self;
  std::uint64_t bytes;
  const void* lane_id;
  net::cancellation_slot withdraw;
  net::any_io_executor fallback;

  template <class Handler>
  void operator()(Handler&& h) {
    net::any_io_executor ex = net::get_associated_executor(h, fallback);
    auto own = net::get_associated_cancellation_slot(h);
    using impl = waiter::handler_impl<std::decay_t<Handler>>;
    auto w = std::make_shared<waiter>(*self, bytes, lane_id, ex, std::make_unique<impl>(std::forward<Handler>(h)));
    w->own_slot = own;
    w->withdraw_slot = withdraw;
    self->enqueue(std::move(w));
  }
};

void controller::enqueue(std::shared_ptr<waiter> w) {
  auto now = now_();
  // Decided under the lock and remembered here: once `w` is linked, another thread may grant it
  // (and change w->st) the moment the lock is released, so w->st must not be re-read below.
  bool waiting = false;
  {
    std::lock_guard lock(mu_);
    w->enqueued = now;
    // Decided again under the lock: the picture may have changed since acquire() looked.
    if (draining_.load(std::memory_order_relaxed)) {
      w->st = wait_state::drained;
    } else if (auto r = try_grant_locked(w->bytes)) {
      w->st = wait_state::granted;
      w->reservation = std::move(*r);
      w->granted_at = now;
    } else if (auto room = room_locked(w->lane_id); room != wait_state::waiting) {
      w->st = room;
    } else if (!slots_->try_queue(queue_depth_)) {
      w->st = wait_state::full;  // the pod's queue filled up since room_locked looked
    } else {
      link_locked(w.get());
      w->queue_ref = w;
      waiting = true;
    }
  }
  if (!waiting) {
    w->queue_ref = w;
    wake(w.get());
    return;
  }
  // Armed after linking. Safe: whoever takes `w` out of the queue posts its completion to w->ex,
  // where we are running now, so finish() (which cancels these) cannot run before we return.
  std::weak_ptr<waiter> weak = w;
  w->timer.expires_after(queue_timeout_);
  w->timer.async_wait(net::bind_executor(w->ex, [weak](error_code ec) {
    if (ec) return;  // cancelled by finish()
    if (auto s = weak.lock()) s->owner->withdraw(s, wait_state::timed_out);
  }));
  auto on_cancel = [weak](net::cancellation_type t) {
    if (t == net::cancellation_type::none) return;
    if (auto s = weak.lock()) s->owner->withdraw(s, wait_state::cancelled);
  };
  if (w->own_slot.is_connected()) w->own_slot.assign(on_cancel);
  if (w->withdraw_slot.is_connected()) w->withdraw_slot.assign(on_cancel);
}

std::optional<permit> controller::grant_now(std::uint64_t reserve_bytes, const void* lane_id, wait_state& room) {
  auto now = now_();
  std::optional<memory_budget::reservation> granted;
  {
    std::lock_guard lock(mu_);
    granted = try_grant_locked(reserve_bytes);
    room = granted ? wait_state::waiting : room_locked(lane_id);
  }
  if (!granted) return std::nullopt;
  admitted_.fetch_add(1, std::memory_order_relaxed);
  if (observers_.on_admitted) observers_.on_admitted(duration::zero());
  return make_permit(std::move(*granted), now);
}

// The lane plays no part: a grant here needs an empty queue, and a request not granted here is not
// refused either (acquire() decides, with its lane).
std::optional<permit> controller::try_admit_now(std::uint64_t reserve_bytes, queue_lane /*lane*/) {
  if (draining() || budget_.over_shed_threshold() || reserve_bytes > budget_.budget()) return std::nullopt;
  wait_state room = wait_state::waiting;
  return grant_now(reserve_bytes, nullptr, room);
}

task<acquire_result> controller::acquire(std::uint64_t reserve_bytes, net::cancellation_slot withdraw,
                                         queue_lane lane) {
  auto cs = co_await net::this_coro::cancellation_state;
  if (cs.cancelled() != net::cancellation_type::none) co_return make_refusal(refusal::cancelled, 0);
  if (draining()) co_return make_refusal(refusal::draining, 0);
  if (budget_.over_shed_threshold() || reserve_bytes > budget_.budget())
    co_return make_refusal(refusal::memory, queued() + 1);

  // Fast path: no allocation, no suspension. Only when a slot is free and nobody waits. A request
  // that could not queue anyway is refused here, before a waiter is made.
  wait_state room = wait_state::waiting;
  if (auto p = grant_now(reserve_bytes, lane.id, room)) co_return std::move(*p);
  if (room == wait_state::full) co_return make_refusal(refusal::queue_full, queue_depth_ + 1);
  if (room == wait_state::key_full) co_return make_refusal(refusal::key_queue_full, lanes());

  auto ex = co_await net::this_coro::executor;
  co_return co_await net::async_initiate<decltype(use_task), void(acquire_result)>(
      initiate_wait{this, reserve_bytes, lane.id, withdraw, ex}, use_task);
}

}  // namespace sluice::admission
