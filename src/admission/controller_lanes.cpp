// controller's lanes (controller_waiter.hpp): a queue_lane's waiters oldest first, the ring of
// lanes with waiters in serving order, the bucket index that finds a lane by its id, and the move of
// a lane's storage when its host waiter leaves first. Everything here runs under the controller's mu_.
#include <functional>

#include "admission/controller.hpp"
#include "admission/controller_waiter.hpp"

namespace sluice::admission {

std::size_t controller::bucket_of(const void* id) const noexcept {
  // Addresses are aligned: mix the high bits down before masking (Fibonacci hashing).
  auto x = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(id));
  x = (x ^ (x >> 29)) * 0x9E3779B97F4A7C15ull;
  return static_cast<std::size_t>(x >> 32) & (buckets_.size() - 1);
}

controller::lane* controller::find_lane_locked(const void* id) const noexcept {
  lane* l = buckets_[bucket_of(id)];
  while (l != nullptr && l->id != id) l = l->chain;
  return l;
}

void controller::link_locked(waiter* w) {
  lane* l = find_lane_locked(w->lane_id);
  if (l == nullptr) {
    l = &w->lane_storage;
    *l = lane{};
    l->id = w->lane_id;
    l->host = w;
    lane*& bucket = buckets_[bucket_of(l->id)];
    l->chain = bucket;
    bucket = l;
    // At the ring's end, just before the cursor: every lane already waiting is served first.
    if (cursor_ == nullptr) {
      l->prev = l->next = l;
      cursor_ = l;
    } else {
      l->next = cursor_;
      l->prev = cursor_->prev;
      cursor_->prev->next = l;
      cursor_->prev = l;
    }
    lanes_.fetch_add(1, std::memory_order_relaxed);
  }
  w->prev = l->tail;
  w->next = nullptr;
  if (l->tail != nullptr) l->tail->next = w;
  else l->head = w;
  l->tail = w;
  ++l->count;
  queued_.fetch_add(1, std::memory_order_relaxed);
}

void controller::unlink_locked(lane* l, waiter* w) {
  assert(l != nullptr && l->id == w->lane_id);
  if (w->prev != nullptr) w->prev->next = w->next;
  else l->head = w->next;
  if (w->next != nullptr) w->next->prev = w->prev;
  else l->tail = w->prev;
  w->prev = w->next = nullptr;
  --l->count;
  queued_.fetch_sub(1, std::memory_order_relaxed);
  slots_->unqueue();
  if (l->count == 0) remove_lane_locked(l);
  else if (l->host == w) move_lane_locked(l, l->head);
}

void controller::remove_lane_locked(lane* l) {
  if (l->next == l) {
    cursor_ = nullptr;
  } else {
    l->prev->next = l->next;
    l->next->prev = l->prev;
    if (cursor_ == l) cursor_ = l->next;
  }
  lane** p = &buckets_[bucket_of(l->id)];
  while (*p != l) p = &(*p)->chain;
  *p = l->chain;
  *l = lane{};
  lanes_.fetch_sub(1, std::memory_order_relaxed);
}

void controller::move_lane_locked(lane* from, waiter* to) {
  // `to` is in this lane and not its host, so its storage is free. Everything that points at the
  // lane (its ring neighbours, the cursor, its index bucket) is repointed: O(1), the waiters keep
  // only the lane's id.
  lane* l = &to->lane_storage;
  *l = *from;
  l->host = to;
  if (from->next == from) {
    l->prev = l->next = l;
  } else {
    l->prev->next = l;
    l->next->prev = l;
  }
  if (cursor_ == from) cursor_ = l;
  lane** p = &buckets_[bucket_of(l->id)];
  while (*p != from) p = &(*p)->chain;
  *p = l;
  *from = lane{};
}

}  // namespace sluice::admission
