#include "routing/pacer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

namespace sluice::routing {

std::optional<duration> parse_reset(std::string_view text) {
  if (text.empty() || text.size() > 64) return std::nullopt;
  double total_ns = 0;
  std::size_t i = 0;
  bool any = false;
  while (i < text.size()) {
    std::size_t start = i;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
    if (i == start) return std::nullopt;
    std::string num(text.substr(start, i - start));
    char* end = nullptr;
    double v = std::strtod(num.c_str(), &end);
    if (end != num.c_str() + num.size() || v < 0) return std::nullopt;
    std::size_t ustart = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    std::string_view unit = text.substr(ustart, i - ustart);
    double scale;
    if (unit == "h") scale = 3600e9;
    else if (unit == "m") scale = 60e9;
    else if (unit == "s" || unit.empty()) scale = 1e9;  // a bare number is seconds (retry-after style)
    else if (unit == "ms") scale = 1e6;
    else if (unit == "us") scale = 1e3;
    else if (unit == "ns") scale = 1;
    else return std::nullopt;
    if (unit.empty() && i != text.size()) return std::nullopt;
    total_ns += v * scale;
    any = true;
  }
  if (!any || total_ns > 86400e9 * 7) return std::nullopt;  // a week: nonsense beyond
  return duration(static_cast<std::int64_t>(total_ns));
}

pacer::pacer(std::uint64_t rpm, std::uint64_t tpm, time_point now) : last_(now) {
  if (rpm) requests_.set_limit(static_cast<double>(rpm));
  if (tpm) tokens_.set_limit(static_cast<double>(tpm));
}

void pacer::refill_locked(time_point now) {
  if (now <= last_) return;
  double s = std::chrono::duration<double>(now - last_).count();
  requests_.refill(s);
  tokens_.refill(s);
  last_ = now;
}

double pacer::wait_locked(std::uint64_t tokens, time_point now) const {
  double wait = std::max(requests_.wait_for(1), tokens_.wait_for(static_cast<double>(tokens)));
  if (blocked_until_ > now) wait = std::max(wait, std::chrono::duration<double>(blocked_until_ - now).count());
  return wait;
}

std::optional<duration> pacer::try_reserve(std::uint64_t tokens, time_point now) {
  std::lock_guard lk(mu_);
  refill_locked(now);
  double wait = wait_locked(tokens, now);
  if (wait > 0) return std::chrono::duration_cast<duration>(std::chrono::duration<double>(wait));
  if (requests_.limit > 0) requests_.level -= 1;
  if (tokens_.limit > 0) tokens_.level -= static_cast<double>(tokens);  // may go below 0 for a big one
  return std::nullopt;
}

std::optional<duration> pacer::wait_time(std::uint64_t tokens, time_point now) {
  std::lock_guard lk(mu_);
  refill_locked(now);
  double wait = wait_locked(tokens, now);
  if (wait <= 0) return std::nullopt;
  return std::chrono::duration_cast<duration>(std::chrono::duration<double>(wait));
}

void pacer::refund(std::uint64_t tokens, time_point now) {
  std::lock_guard lk(mu_);
  refill_locked(now);
  if (requests_.limit > 0) requests_.level = std::min(requests_.limit, requests_.level + 1);
  if (tokens_.limit > 0) tokens_.level = std::min(tokens_.limit, tokens_.level + static_cast<double>(tokens));
}

void pacer::settle(std::uint64_t estimated, std::uint64_t actual, time_point now) {
  std::lock_guard lk(mu_);
  refill_locked(now);
  if (tokens_.limit == 0) return;
  tokens_.level = std::min(tokens_.limit, tokens_.level + static_cast<double>(estimated) - static_cast<double>(actual));
}

void pacer::observe(const ratelimit_headers& h, time_point now) {
  std::lock_guard lk(mu_);
  refill_locked(now);
  if (h.limit_requests && *h.limit_requests > 0) requests_.set_limit(*h.limit_requests);
  if (h.limit_tokens && *h.limit_tokens > 0) tokens_.set_limit(*h.limit_tokens);
  // The upstream's count is the truth it will enforce; ours may only be lower (requests we have
  // sent since that response was produced are already charged here, not yet there).
  if (h.remaining_requests && requests_.limit > 0) requests_.level = std::min(requests_.level, *h.remaining_requests);
  if (h.remaining_tokens && tokens_.limit > 0) tokens_.level = std::min(tokens_.level, *h.remaining_tokens);
  // "Full again in <reset>": refill at least that fast (a per-minute limit refills over a minute,
  // but an upstream may say it recovers sooner).
  auto pace_from = [](bucket& b, const std::optional<double>& remaining, const std::optional<duration>& reset) {
    if (b.limit <= 0 || !remaining || !reset || reset->count() <= 0) return;
    double s = std::chrono::duration<double>(*reset).count();
    double said = (b.limit - std::min(*remaining, b.limit)) / s;
    // Within 10% of the per-minute rate is rounding in the reset text, not a faster upstream:
    // erring fast by a hair would let a request through that the upstream then refuses.
    b.per_second = said > 1.1 * b.limit / 60.0 ? said : b.limit / 60.0;
  };
  pace_from(requests_, h.remaining_requests, h.reset_requests);
  pace_from(tokens_, h.remaining_tokens, h.reset_tokens);
  if (h.retry_after) blocked_until_ = std::max(blocked_until_, now + *h.retry_after);
}

void pacer::block_until(time_point until) {
  std::lock_guard lk(mu_);
  blocked_until_ = std::max(blocked_until_, until);
}

bool pacer::has_token_budget() const {
  std::lock_guard lk(mu_);
  return tokens_.limit > 0;
}

pacer_snapshot pacer::snapshot(time_point now) {
  std::lock_guard lk(mu_);
  refill_locked(now);
  return {requests_.limit, requests_.level, tokens_.limit, tokens_.level, blocked_until_};
}

}  // namespace sluice::routing
