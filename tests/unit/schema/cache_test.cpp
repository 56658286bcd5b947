// schema_cache and canonical_json: content keys, LRU and byte bounds, TTL through an injected
// clock, single-flight compiles, and counters.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <thread>
#include <vector>

#include "schema/cache.hpp"
#include "test_util.hpp"

using namespace sluice::schema;
namespace json = boost::json;

namespace {

json::value numbered(int i) {
  return json::parse(R"({"type":"object","properties":{"n":{"const":)" + std::to_string(i) + "}}}");
}

}  // namespace

TEST(schema_canonical, sorts_keys_strips_whitespace_normalises_numbers) {
  EXPECT_EQ(canonical_json(json::parse(R"( { "b" : [1.0, 1e0, 1, -0.0, 2.5, 1e300], "a" : {"y":null,"x":"\n\""} } )")),
            R"({"a":{"x":"\u000a\"","y":null},"b":[1,1,1,0,2.5,1e+300]})");
  EXPECT_EQ(canonical_json(json::parse("18446744073709551615")), "18446744073709551615");
  EXPECT_EQ(canonical_json(json::parse("1.8446744073709552e19")), canonical_json(json::parse("18446744073709551616.0")));
  EXPECT_NE(canonical_json(json::parse(R"({"a":1})")), canonical_json(json::parse(R"({"a":"1"})")));
}

TEST(schema_cache, same_content_hits_the_same_entry) {
  schema_cache cache;
  auto a = cache.get_or_compile(json::parse(R"({"type":"object","properties":{"x":{"maximum":1}},"required":["x"]})"));
  auto b = cache.get_or_compile(json::parse(R"({ "required" : ["x"], "properties":{"x":{"maximum":1.0}}, "type":"object" })"));
  auto c = cache.get_or_compile(json::parse(R"({"properties":{"x":{"maximum":1e0}},"type":"object","required":["x"]})"));
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(a->get(), b->get());
  EXPECT_EQ(a->get(), c->get());
  auto d = cache.get_or_compile(json::parse(R"({"properties":{"x":{"maximum":2}},"type":"object","required":["x"]})"));
  ASSERT_TRUE(d);
  EXPECT_NE(a->get(), d->get());
  auto st = cache.snapshot();
  EXPECT_EQ(st.hits, 2u);
  EXPECT_EQ(st.misses, 2u);
  EXPECT_EQ(st.compiles, 2u);
  EXPECT_EQ(st.entries, 2u);
  EXPECT_GT(st.bytes, 0u);
  EXPECT_GT(st.compile_seconds_total, 0.0);
}

TEST(schema_cache, lru_eviction_by_entries) {
  cache_options o;
  o.max_entries = 4;
  o.shards = 1;
  schema_cache cache(o);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(cache.get_or_compile(numbered(i)));
  ASSERT_TRUE(cache.get_or_compile(numbered(0)));  // 0 becomes most recent; 1 is now the oldest
  ASSERT_TRUE(cache.get_or_compile(numbered(4)));
  auto st = cache.snapshot();
  EXPECT_EQ(st.entries, 4u);
  EXPECT_EQ(st.evictions, 1u);
  ASSERT_TRUE(cache.get_or_compile(numbered(0)));
  EXPECT_EQ(cache.snapshot().hits, st.hits + 1);
  ASSERT_TRUE(cache.get_or_compile(numbered(1)));
  EXPECT_EQ(cache.snapshot().misses, st.misses + 1);
}

TEST(schema_cache, byte_bound) {
  const std::size_t one = (*compile(numbered(0)))->estimated_bytes();
  cache_options o;
  o.shards = 1;
  o.max_bytes = one * 3 + one / 2 + 600;  // about three entries (plus text and bookkeeping)
  schema_cache cache(o);
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(cache.get_or_compile(numbered(i)));
    auto st = cache.snapshot();
    EXPECT_LE(st.bytes, o.max_bytes);
    EXPECT_LE(st.entries, 3u);
  }
  EXPECT_GE(cache.snapshot().evictions, 46u);
  // Eviction never invalidates a schema somebody holds.
  auto held = cache.get_or_compile(numbered(1000));
  ASSERT_TRUE(held);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(cache.get_or_compile(numbered(2000 + i)));
  EXPECT_FALSE((*held)->validate_text(R"({"n":1000})"));
  EXPECT_TRUE((*held)->validate_text(R"({"n":1})"));
}

TEST(schema_cache, ttl_with_injected_clock) {
  auto now = std::make_shared<std::chrono::steady_clock::time_point>();
  cache_options o;
  o.ttl = std::chrono::seconds(10);
  o.clock = [now] { return *now; };
  schema_cache cache(o);
  ASSERT_TRUE(cache.get_or_compile(numbered(1)));
  *now += std::chrono::seconds(9);
  ASSERT_TRUE(cache.get_or_compile(numbered(1)));
  EXPECT_EQ(cache.snapshot().hits, 1u);
  *now += std::chrono::seconds(1);
  ASSERT_TRUE(cache.get_or_compile(numbered(1)));
  auto st = cache.snapshot();
  EXPECT_EQ(st.expirations, 1u);
  EXPECT_EQ(st.misses, 2u);
  EXPECT_EQ(st.entries, 1u);
}

TEST(schema_cache, single_flight_compiles_once) {
  // A schema that takes a while to compile (many patterns), requested by many threads at once.
  json::object props;
  for (int i = 0; i < 300; ++i) props["p" + std::to_string(i)] = json::object{{"pattern", "^[a-z]{1,20}[0-9]+$"}};
  json::value schema = json::object{{"properties", props}};
  schema_cache cache;
  constexpr int threads = 16;
  std::barrier start(threads);
  std::vector<const compiled_schema*> got(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      start.arrive_and_wait();
      auto r = cache.get_or_compile(schema);
      got[t] = r ? r->get() : nullptr;
    });
  }
  for (auto& th : pool) th.join();
  for (int t = 0; t < threads; ++t) EXPECT_EQ(got[t], got[0]);
  EXPECT_NE(got[0], nullptr);
  auto st = cache.snapshot();
  EXPECT_EQ(st.compiles, 1u);
  EXPECT_EQ(st.misses, 1u);
  EXPECT_EQ(st.hits, threads - 1u);
}

TEST(schema_cache, refusals_are_returned_and_not_cached) {
  schema_cache cache;
  json::value bad = json::parse(R"({"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"})");
  auto r = cache.get_or_compile(bad);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.err().code, sluice::errc::bad_request);
  EXPECT_FALSE(cache.get_or_compile(bad));
  auto st = cache.snapshot();
  EXPECT_EQ(st.compile_errors, 2u);
  EXPECT_EQ(st.entries, 0u);
  EXPECT_EQ(st.bytes, 0u);
}

TEST(schema_cache, clear_empties_and_keeps_counters_consistent) {
  schema_cache cache;
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(cache.get_or_compile(numbered(i)));
  EXPECT_EQ(cache.snapshot().entries, 20u);
  cache.clear();
  EXPECT_EQ(cache.snapshot().entries, 0u);
  EXPECT_EQ(cache.snapshot().bytes, 0u);
}
