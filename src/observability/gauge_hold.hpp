// gauge_hold: adds an amount to a prometheus::Gauge for as long as it lives (a stream being active,
// bytes being buffered), so the gauge cannot drift when a coroutine exits early. Move-only; the
// gauge must outlive the hold. Not thread-safe itself, but the gauge updates are atomic.
#pragma once

#include <prometheus/gauge.h>

#include <utility>

namespace sluice::obs {

class [[nodiscard]] gauge_hold {
 public:
  gauge_hold() noexcept = default;
  explicit gauge_hold(prometheus::Gauge& gauge, double amount = 1.0) : gauge_(&gauge), amount_(amount) {
    gauge_->Increment(amount_);
  }
  gauge_hold(gauge_hold&& other) noexcept
      : gauge_(std::exchange(other.gauge_, nullptr)), amount_(std::exchange(other.amount_, 0.0)) {}
  gauge_hold& operator=(gauge_hold&& other) noexcept {
    if (this != &other) {
      reset();
      gauge_ = std::exchange(other.gauge_, nullptr);
      amount_ = std::exchange(other.amount_, 0.0);
    }
    return *this;
  }
  gauge_hold(const gauge_hold&) = delete;
  gauge_hold& operator=(const gauge_hold&) = delete;
  ~gauge_hold() { reset(); }

  // Changes the held amount (e.g. a buffer that grew), moving the gauge by the difference.
  void set_amount(double amount) {
    if (gauge_ != nullptr) gauge_->Increment(amount - amount_);
    amount_ = amount;
  }
  // Gives the amount back now instead of at destruction.
  void reset() noexcept {
    if (gauge_ != nullptr) gauge_->Decrement(amount_);
    gauge_ = nullptr;
    amount_ = 0.0;
  }

  bool holds() const noexcept { return gauge_ != nullptr; }
  double amount() const noexcept { return amount_; }

 private:
  prometheus::Gauge* gauge_ = nullptr;
  double amount_ = 0.0;
};

}  // namespace sluice::obs
