#include "schema/cache.hpp"

#include <algorithm>
#include <future>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "schema/compile_support.hpp"

namespace sluice::schema {

namespace {

using compiled_ptr = std::shared_ptr<const compiled_schema>;
using compile_result = result<compiled_ptr>;

// Entries are keyed by (hash, canonical text): the 64-bit hash picks the bucket, the full text
// decides equality, so two schemas can never share an entry by a hash collision.
struct key {
  std::uint64_t hash;
  std::string_view text;
  bool operator==(const key& o) const noexcept { return hash == o.hash && text == o.text; }
};
struct key_hash {
  std::size_t operator()(const key& k) const noexcept { return static_cast<std::size_t>(k.hash); }
};

// Book-keeping per entry beyond the compiled schema and the text: list node, index node, control block.
constexpr std::size_t entry_overhead = 192;

}  // namespace

struct schema_cache::shard {
  struct entry {
    std::string text;
    std::uint64_t hash = 0;
    compiled_ptr schema;
    std::size_t bytes = 0;
    std::chrono::steady_clock::time_point inserted;
  };
  struct flight {
    std::string text;
    std::promise<compile_result> promise;
    std::shared_future<compile_result> future;
  };

  std::mutex mu;
  std::list<entry> lru;  // front: most recently used
  std::unordered_map<key, std::list<entry>::iterator, key_hash> index;
  std::unordered_map<key, std::shared_ptr<flight>, key_hash> inflight;
  std::size_t bytes = 0;

  // Caller holds mu: removes entry e and its bytes from the shard and from the cache's totals.
  void drop(std::list<entry>::iterator e, std::atomic<std::uint64_t>& total_bytes,
            std::atomic<std::uint64_t>& total_entries) {
    index.erase(key{e->hash, e->text});
    bytes -= e->bytes;
    total_bytes.fetch_sub(e->bytes, std::memory_order_relaxed);
    total_entries.fetch_sub(1, std::memory_order_relaxed);
    lru.erase(e);
  }
};

schema_cache::schema_cache(cache_options options) : opts_(std::move(options)) {
  opts_.max_entries = std::max<std::size_t>(1, opts_.max_entries);
  opts_.shards = std::clamp<std::size_t>(opts_.shards, 1, opts_.max_entries);
  shard_entries_ = opts_.max_entries / opts_.shards;
  shard_bytes_ = opts_.max_bytes / opts_.shards;
  for (std::size_t i = 0; i < opts_.shards; ++i) shards_.push_back(std::make_unique<shard>());
}

schema_cache::~schema_cache() = default;

std::chrono::steady_clock::time_point schema_cache::now() const {
  return opts_.clock ? opts_.clock() : std::chrono::steady_clock::now();
}

// What a lookup under a shard's lock found: exactly one of the three is set.
struct schema_cache::claim {
  std::optional<compiled_ptr> hit;            // a live entry
  std::shared_future<compile_result> theirs;  // another request's compile of the same schema
  std::shared_ptr<shard::flight> mine;        // this request compiles it
};

result<std::shared_ptr<const compiled_schema>> schema_cache::get_or_compile(const boost::json::value& schema,
                                                                            compile_purpose purpose) {
  // The limits that need no compile are checked before the key is built: a refused schema costs a
  // walk of what the request already holds, not a canonical copy of it.
  if (auto shape = detail::check_shape(schema, opts_.limits); !shape) {
    compile_errors_.fetch_add(1, std::memory_order_relaxed);
    return std::move(shape).err();
  }
  std::string text = canonical_json(schema);
  // JSON text never starts with a letter other than t/f/n, so the prefix cannot collide with a key.
  if (purpose == compile_purpose::check_only) text.insert(0, "check:");
  const std::uint64_t h = std::hash<std::string_view>{}(text);
  shard& s = *shards_[(h ^ (h >> 29)) % shards_.size()];
  claim c = find_or_claim(s, h, std::move(text));
  if (c.hit) return *c.hit;
  if (!c.mine) return c.theirs.get();

  // Compile outside the lock: other schemas in this shard stay servable meanwhile.
  compile_result r = timed_compile(schema, purpose);
  land(s, h, c.mine->text, r);
  c.mine->promise.set_value(r);
  return r;
}

// Under the shard's lock: a live entry (moved to the front), else a compile in flight to join,
// else a new flight this request owns. An expired entry is dropped on the way.
schema_cache::claim schema_cache::find_or_claim(shard& s, std::uint64_t h, std::string text) {
  claim c;
  std::lock_guard lock(s.mu);
  if (auto it = s.index.find(key{h, text}); it != s.index.end()) {
    auto e = it->second;
    if (opts_.ttl.count() > 0 && now() - e->inserted >= opts_.ttl) {
      s.drop(e, bytes_, entries_);
      expirations_.fetch_add(1, std::memory_order_relaxed);
    } else {
      s.lru.splice(s.lru.begin(), s.lru, e);
      hits_.fetch_add(1, std::memory_order_relaxed);
      c.hit = e->schema;
      return c;
    }
  }
  if (auto f = s.inflight.find(key{h, text}); f != s.inflight.end()) {
    c.theirs = f->second->future;
    hits_.fetch_add(1, std::memory_order_relaxed);
    coalesced_.fetch_add(1, std::memory_order_relaxed);
  } else {
    c.mine = std::make_shared<shard::flight>();
    c.mine->text = std::move(text);
    c.mine->future = c.mine->promise.get_future().share();
    s.inflight.emplace(key{h, c.mine->text}, c.mine);
    misses_.fetch_add(1, std::memory_order_relaxed);
  }
  return c;
}

compile_result schema_cache::timed_compile(const boost::json::value& schema, compile_purpose purpose) {
  auto t0 = std::chrono::steady_clock::now();
  compile_result r = compile(schema, opts_.limits, purpose);
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
  compiles_.fetch_add(1, std::memory_order_relaxed);
  compile_ns_.fetch_add(static_cast<std::uint64_t>(ns), std::memory_order_relaxed);
  if (!r) compile_errors_.fetch_add(1, std::memory_order_relaxed);
  return r;
}

// Under the shard's lock: this request's flight ends, and its schema is kept (the least recently
// used entries evicted to make room) unless refused or larger than the whole shard's budget.
void schema_cache::land(shard& s, std::uint64_t h, std::string& text, const compile_result& r) {
  std::lock_guard lock(s.mu);
  s.inflight.erase(key{h, text});
  const std::size_t b = r ? r.value()->estimated_bytes() + text.capacity() + entry_overhead : 0;
  // A schema larger than a whole shard's budget is served but not kept.
  if (r && b <= shard_bytes_) {
    while (!s.lru.empty() && (s.lru.size() + 1 > shard_entries_ || s.bytes + b > shard_bytes_)) {
      s.drop(std::prev(s.lru.end()), bytes_, entries_);
      evictions_.fetch_add(1, std::memory_order_relaxed);
    }
    s.lru.push_front(shard::entry{std::move(text), h, r.value(), b, now()});
    s.index.emplace(key{h, s.lru.front().text}, s.lru.begin());
    s.bytes += b;
    entries_.fetch_add(1, std::memory_order_relaxed);
    bytes_.fetch_add(b, std::memory_order_relaxed);
  }
}

cache_stats schema_cache::snapshot() const {
  cache_stats st;
  st.hits = hits_.load(std::memory_order_relaxed);
  st.misses = misses_.load(std::memory_order_relaxed);
  st.coalesced = coalesced_.load(std::memory_order_relaxed);
  st.evictions = evictions_.load(std::memory_order_relaxed);
  st.expirations = expirations_.load(std::memory_order_relaxed);
  st.compiles = compiles_.load(std::memory_order_relaxed);
  st.compile_errors = compile_errors_.load(std::memory_order_relaxed);
  st.entries = entries_.load(std::memory_order_relaxed);
  st.bytes = bytes_.load(std::memory_order_relaxed);
  st.compile_seconds_total = static_cast<double>(compile_ns_.load(std::memory_order_relaxed)) / 1e9;
  return st;
}

void schema_cache::clear() {
  for (auto& sp : shards_) {
    std::lock_guard lock(sp->mu);
    entries_.fetch_sub(sp->lru.size(), std::memory_order_relaxed);
    bytes_.fetch_sub(sp->bytes, std::memory_order_relaxed);
    sp->index.clear();
    sp->lru.clear();
    sp->bytes = 0;
  }
}

}  // namespace sluice::schema
