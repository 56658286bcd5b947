// shared_segment<T>: one T in an anonymous MAP_SHARED mapping, made before fork(), so that a
// supervisor and every worker process it forks read and write the same object. T holds lock-free
// atomics only (they are address-free, so they work across processes) and is constructed once, by
// the creator; the mapping is unmapped when the creating object (and each forked copy of it) goes.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace sluice::runtime {

template <class T>
class shared_segment {
  static_assert(std::is_trivially_destructible_v<T>, "a shared segment's state is never destroyed, only unmapped");

 public:
  template <class... Args>
  explicit shared_segment(Args&&... args) {
    void* p = ::mmap(nullptr, sizeof(T), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("mmap of a shared segment failed");
    value_ = ::new (p) T(std::forward<Args>(args)...);
  }
  ~shared_segment() {
    if (value_) ::munmap(value_, sizeof(T));
  }
  shared_segment(const shared_segment&) = delete;
  shared_segment& operator=(const shared_segment&) = delete;

  T& operator*() const noexcept { return *value_; }
  T* operator->() const noexcept { return value_; }
  T* get() const noexcept { return value_; }

 private:
  T* value_ = nullptr;
};

}  // namespace sluice::runtime
