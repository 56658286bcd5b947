// Reading an upstream response's rate-limit headers, and the retry backoff. Pure functions.
#pragma once

#include <random>

#include <boost/beast/http/fields.hpp>

#include "core/rfc3339.hpp"
#include "routing/pacer.hpp"

namespace sluice::routing {

// x-ratelimit-{limit,remaining,reset}-{requests,tokens}, retry-after-ms, retry-after (seconds).
ratelimit_headers read_ratelimit_headers(const boost::beast::http::fields& f);

// Anthropic's: anthropic-ratelimit-{requests,tokens}-{limit,remaining,reset}, each reset an RFC 3339
// time, read as the time left from `now` (a past one: zero); retry-after as above. The `tokens`
// figures are Anthropic's most restrictive token limit at the moment (input and output combined).
ratelimit_headers read_anthropic_ratelimit_headers(const boost::beast::http::fields& f, sys_time now);

// Exponential backoff with full jitter: uniform over [0, min(cap, base * 2^retry)].
template <class Rng>
duration full_jitter(duration base, duration cap, unsigned retry, Rng& rng) {
  auto ceiling = base;
  for (unsigned i = 0; i < retry && ceiling < cap; ++i) ceiling *= 2;
  if (ceiling > cap) ceiling = cap;
  if (ceiling.count() <= 0) return duration::zero();
  std::uniform_int_distribution<std::int64_t> d(0, ceiling.count());
  return duration(d(rng));
}

}  // namespace sluice::routing
