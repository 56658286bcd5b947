#include "routing/headers.hpp"

#include <cstdlib>
#include <string>

#include "core/openai_duration.hpp"

namespace sluice::routing {

namespace {

std::optional<double> number(const boost::beast::http::fields& f, std::string_view name) {
  auto it = f.find(name);
  if (it == f.end()) return std::nullopt;
  std::string s(it->value());
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !(v >= 0)) return std::nullopt;
  return v;
}

std::optional<duration> reset(const boost::beast::http::fields& f, std::string_view name) {
  auto it = f.find(name);
  if (it == f.end()) return std::nullopt;
  return parse_openai_duration(it->value());
}

std::optional<duration> reset_at(const boost::beast::http::fields& f, std::string_view name, sys_time now) {
  auto it = f.find(name);
  if (it == f.end()) return std::nullopt;
  auto at = parse_rfc3339(it->value());
  if (!at) return std::nullopt;
  if (*at <= now) return duration::zero();
  const auto left = std::chrono::duration_cast<duration>(*at - now);
  return left > std::chrono::hours(24 * 7) ? std::nullopt : std::optional<duration>(left);  // garbage, as for OpenAI's
}

void read_retry_after(const boost::beast::http::fields& f, ratelimit_headers& h) {
  if (auto ms = number(f, "retry-after-ms")) {
    h.retry_after = std::chrono::duration_cast<duration>(std::chrono::duration<double, std::milli>(*ms));
  } else if (auto s = number(f, "retry-after")) {  // the HTTP-date form is not used by LLM APIs
    h.retry_after = std::chrono::duration_cast<duration>(std::chrono::duration<double>(*s));
  }
  if (h.retry_after && *h.retry_after > std::chrono::hours(1)) h.retry_after = std::chrono::hours(1);
}

}  // namespace

ratelimit_headers read_anthropic_ratelimit_headers(const boost::beast::http::fields& f, sys_time now) {
  ratelimit_headers h;
  h.limit_requests = number(f, "anthropic-ratelimit-requests-limit");
  h.remaining_requests = number(f, "anthropic-ratelimit-requests-remaining");
  h.limit_tokens = number(f, "anthropic-ratelimit-tokens-limit");
  h.remaining_tokens = number(f, "anthropic-ratelimit-tokens-remaining");
  h.reset_requests = reset_at(f, "anthropic-ratelimit-requests-reset", now);
  h.reset_tokens = reset_at(f, "anthropic-ratelimit-tokens-reset", now);
  read_retry_after(f, h);
  return h;
}

ratelimit_headers read_ratelimit_headers(const boost::beast::http::fields& f) {
  ratelimit_headers h;
  h.limit_requests = number(f, "x-ratelimit-limit-requests");
  h.remaining_requests = number(f, "x-ratelimit-remaining-requests");
  h.limit_tokens = number(f, "x-ratelimit-limit-tokens");
  h.remaining_tokens = number(f, "x-ratelimit-remaining-tokens");
  h.reset_requests = reset(f, "x-ratelimit-reset-requests");
  h.reset_tokens = reset(f, "x-ratelimit-reset-tokens");
  read_retry_after(f, h);
  return h;
}

}  // namespace sluice::routing
