// The classic leak, reversed: many threads validate outputs against many distinct (recurring)
// schemas through one schema_cache capped at 1,000 entries. The caps hold at every moment
// (sampled by a monitor thread), and resident memory stays flat once the cache is warm.
#include <gtest/gtest.h>

#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <cstdio>
#include <fstream>
#include <random>
#include <thread>
#include <vector>

#include "schema/cache.hpp"
#include "test_util.hpp"

using namespace sluice::schema;
namespace json = boost::json;

namespace {

std::size_t rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

json::value schema_for(int i) {
  return json::parse(R"({"type":"object","properties":{"id":{"type":"integer","minimum":)" + std::to_string(i) +
                     R"(},"name":{"type":"string","maxLength":64},"kind":{"enum":["a","b","c"]},
                     "tags":{"type":"array","items":{"type":"string"},"maxItems":8}},
                     "required":["id","name"],"additionalProperties":false})");
}

#if defined(__SANITIZE_ADDRESS__)
// ASan keeps freed memory in quarantine and makes each operation ~10x slower: run a quarter of
// the work and report (not assert) RSS, which quarantine inflates by design.
constexpr int total_validations = 25000;
constexpr bool assert_rss = false;
#else
constexpr int total_validations = 100000;
constexpr bool assert_rss = true;
#endif

}  // namespace

TEST(schema_leak, bounded_cache_under_many_threads_and_schemas) {
  constexpr int threads = 8;
  constexpr int distinct = 10000;
  constexpr int per_thread = total_validations / threads;
  constexpr int warmup = per_thread / 2;  // the allocator settles after the cache has churned a while

  std::vector<json::value> schemas;
  schemas.reserve(distinct);
  for (int i = 0; i < distinct; ++i) schemas.push_back(schema_for(i));

  cache_options opts;  // defaults: 1,000 entries, 64 MiB, 16 shards
  schema_cache cache(opts);
  std::atomic<bool> over_cap{false}, done{false};
  std::atomic<std::uint64_t> valid{0}, invalid{0}, samples{0};
  std::size_t rss_warm = 0;

  std::thread monitor([&] {
    while (!done.load()) {
      auto st = cache.snapshot();
      if (st.entries > opts.max_entries || st.bytes > opts.max_bytes) over_cap = true;
      samples.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });

  // RSS is read after handing freed heap back to the system (malloc_trim), so that what is compared
  // is memory still in use, not what glibc's arenas happen to keep cached from the churn.
  std::barrier warm(threads, [&]() noexcept {
    ::malloc_trim(0);
    rss_warm = rss_bytes();
  });
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t) * 7919u + 1);
      // Half the traffic goes to a popular 500, half is spread over all 10k: every schema recurs.
      std::uniform_int_distribution<int> hot(0, 499), any(0, distinct - 1), coin(0, 1);
      for (int i = 0; i < per_thread; ++i) {
        if (i == warmup) warm.arrive_and_wait();
        int k = coin(rng) ? hot(rng) : any(rng);
        auto s = cache.get_or_compile(schemas[static_cast<std::size_t>(k)]);
        if (!s) {
          ADD_FAILURE() << s.err().message;
          continue;
        }
        // Every 4th output is wrong (id below the schema's minimum).
        int id = (i % 4 == 3) ? k - 1 : k + i % 100;
        std::string out = R"({"id":)" + std::to_string(id) + R"(,"name":"item-)" + std::to_string(i) +
                          R"(","kind":"b","tags":["x","y"]})";
        if ((*s)->validate_text(out)) ++invalid;
        else ++valid;
      }
    });
  }
  for (auto& th : pool) th.join();
  ::malloc_trim(0);
  const std::size_t rss_end = rss_bytes();
  done = true;
  monitor.join();

  auto st = cache.snapshot();
  const double hit_rate = static_cast<double>(st.hits) / static_cast<double>(st.hits + st.misses);
  const double growth = (static_cast<double>(rss_end) - static_cast<double>(rss_warm)) / static_cast<double>(rss_warm);
  std::printf("[ leak     ] %d validations, %d schemas: hit rate %.1f%%, compiles %llu, evictions %llu, "
              "entries %llu, bytes %llu, RSS warm %.1f MiB -> end %.1f MiB (%+.2f%%), %llu cap samples\n",
              total_validations, distinct, hit_rate * 100, static_cast<unsigned long long>(st.compiles),
              static_cast<unsigned long long>(st.evictions), static_cast<unsigned long long>(st.entries),
              static_cast<unsigned long long>(st.bytes), static_cast<double>(rss_warm) / (1 << 20),
              static_cast<double>(rss_end) / (1 << 20), growth * 100, static_cast<unsigned long long>(samples.load()));

  EXPECT_FALSE(over_cap.load());
  EXPECT_GT(samples.load(), 10u);
  EXPECT_LE(st.entries, opts.max_entries);
  EXPECT_LE(st.bytes, opts.max_bytes);
  EXPECT_EQ(st.hits + st.misses, static_cast<std::uint64_t>(threads) * per_thread);
  EXPECT_GT(st.evictions, 0u);
  EXPECT_EQ(valid.load() + invalid.load(), static_cast<std::uint64_t>(threads) * per_thread);
  EXPECT_EQ(invalid.load(), static_cast<std::uint64_t>(threads) * (per_thread / 4));
  if (assert_rss) {
    EXPECT_LT(growth, 0.05) << "RSS grew after warm-up";
  }
}
