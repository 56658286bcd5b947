// boxed<T>: an optional T kept on the heap. For rarely-set members of objects that live in
// long-lived coroutine frames (one per open stream): empty it costs one pointer, not sizeof(T).
#pragma once

#include <memory>
#include <utility>

namespace sluice {

template <class T>
class boxed {
 public:
  boxed() = default;
  boxed(T v) : p_(std::make_unique<T>(std::move(v))) {}  // NOLINT: implicit, like optional
  boxed(boxed&&) noexcept = default;
  boxed& operator=(boxed&&) noexcept = default;
  boxed& operator=(T v) {
    if (p_) *p_ = std::move(v);
    else p_ = std::make_unique<T>(std::move(v));
    return *this;
  }

  explicit operator bool() const noexcept { return p_ != nullptr; }
  bool has_value() const noexcept { return p_ != nullptr; }
  T& operator*() noexcept { return *p_; }
  const T& operator*() const noexcept { return *p_; }
  T* operator->() noexcept { return p_.get(); }
  const T* operator->() const noexcept { return p_.get(); }
  void reset() noexcept { p_.reset(); }

 private:
  std::unique_ptr<T> p_;
};

}  // namespace sluice
