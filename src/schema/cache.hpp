// schema_cache: compiled schemas keyed by the content of the schema (its canonical text), so the
// same schema from any thread or client shares one entry. Bounded by entries and by estimated
// bytes (LRU eviction), optional TTL, sharded (one mutex per shard), and single-flight: concurrent
// first requests for one schema compile it once. Thread-safe; entries are shared_ptr, so eviction
// never invalidates a validator in use. One set of compile_limits per cache (fixed for its life), so
// the limits need no place in the key; the compile_purpose does have one.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/json/value.hpp>

#include "core/error.hpp"
#include "schema/schema.hpp"

namespace sluice::schema {

struct cache_options {
  std::size_t max_entries = 1000;
  std::size_t max_bytes = 64 * 1024 * 1024;  // estimated compiled size + canonical text
  std::chrono::nanoseconds ttl{0};           // 0: entries never expire
  std::size_t shards = 16;                   // capped at max_entries; caps are split evenly
  compile_limits limits{};                   // every schema is compiled under these
  // Time source for the TTL (a seam for tests); empty means std::chrono::steady_clock::now.
  std::function<std::chrono::steady_clock::time_point()> clock;
};

// A consistent-enough copy of the counters, for /metrics.
struct cache_stats {
  std::uint64_t hits = 0;            // served from an entry (or by joining an in-flight compile)
  std::uint64_t misses = 0;          // compiled by this request
  std::uint64_t coalesced = 0;       // of the hits, those that waited for another request's compile
  std::uint64_t evictions = 0;       // removed to respect max_entries/max_bytes
  std::uint64_t expirations = 0;     // removed because the TTL passed
  std::uint64_t compiles = 0;
  std::uint64_t compile_errors = 0;  // refused schemas (not cached)
  std::uint64_t entries = 0;
  std::uint64_t bytes = 0;
  double compile_seconds_total = 0;
};

class schema_cache {
 public:
  explicit schema_cache(cache_options options = {});
  ~schema_cache();
  schema_cache(const schema_cache&) = delete;
  schema_cache& operator=(const schema_cache&) = delete;

  // The compiled schema for `schema`, compiling it (once, however many threads ask) on a miss.
  // A refused schema is an error (errc::bad_request with a JSON pointer in param) and is not cached.
  // The same schema compiled for another purpose is another entry: a check_only program must
  // never be handed out for validation.
  result<std::shared_ptr<const compiled_schema>> get_or_compile(const boost::json::value& schema,
                                                                compile_purpose purpose = compile_purpose::validate);

  cache_stats snapshot() const;
  const cache_options& options() const noexcept { return opts_; }
  void clear();

 private:
  struct shard;
  struct claim;
  std::chrono::steady_clock::time_point now() const;
  claim find_or_claim(shard& s, std::uint64_t h, std::string text);
  result<std::shared_ptr<const compiled_schema>> timed_compile(const boost::json::value& schema,
                                                               compile_purpose purpose);
  void land(shard& s, std::uint64_t h, std::string& text, const result<std::shared_ptr<const compiled_schema>>& r);

  cache_options opts_;
  std::size_t shard_entries_;  // per-shard caps: the sum never exceeds the global caps
  std::size_t shard_bytes_;
  std::vector<std::unique_ptr<shard>> shards_;

  std::atomic<std::uint64_t> hits_{0}, misses_{0}, coalesced_{0}, evictions_{0}, expirations_{0};
  std::atomic<std::uint64_t> compiles_{0}, compile_errors_{0}, entries_{0}, bytes_{0}, compile_ns_{0};
};

}  // namespace sluice::schema
