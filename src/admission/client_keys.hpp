// admission::client_keys: optional API keys, each with its own concurrent-stream cap, requests-per-
// minute and tokens-per-minute buckets. Loaded once at start-up, then immutable except for the
// per-key counters (a small mutex per key), so it is safe from every worker thread. Keys are never
// logged and never appear in error messages. client_keys must outlive every handle and permit.
// `key_limits` is the seam: the local limits here, or the ones every replica shares through Redis
// (shared_key_limits.hpp).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "core/error.hpp"
#include "core/openai_duration.hpp"
#include "core/token_bucket.hpp"
#include "core/units.hpp"
#include "runtime/asio.hpp"

namespace sluice::admission {

// A tenant id: 32 hex digits (128 bits) of SHA-256 over a domain tag and the key's SHA-256. Stable
// for a key across restarts, processes and replicas; it names no key and reveals none (it is what
// Redis and the stores hold as a response's owner). tenant_of_credential: the same for a bare
// credential (what follows "Bearer "), so a key has one tenant whether or not a keys file names it.
std::string tenant_of_digest(const std::array<unsigned char, 32>& key_digest);
std::string tenant_of_credential(std::string_view credential);
// The credential of an Authorization header value ("Bearer <key>", scheme case-insensitive);
// empty when it is not one.
std::string_view bearer_credential(std::string_view authorization) noexcept;

// One x-ratelimit-{limit,remaining,reset}-{requests,tokens} triple.
struct rate_header {
  std::uint64_t limit = 0;
  std::uint64_t remaining = 0;
  std::string reset;  // until the bucket is full again, written by format_openai_duration
                      // (core/openai_duration.hpp)
};

// The x-ratelimit-* header values for one key: requests when it has an rpm limit, tokens when it
// has a tpm limit.
struct rate_headers {
  std::optional<rate_header> requests;
  std::optional<rate_header> tokens;
};

namespace detail {
struct key_entry {
  std::array<unsigned char, 32> digest{};  // SHA-256 of the key; the key itself is not kept
  std::string name;                        // safe to log: from the file, or "key-<line>"
  std::string tenant;                      // what owns the key's stored things (tenant_of_digest)
  std::size_t line = 0;                    // the keys file's line (messages about the file)
  std::size_t index = 0;                   // position in the file's keys (the same in every copy)
  const void* identity = nullptr;          // the loaded file's entry, also for a divided() copy's
  std::uint64_t max_streams = 0;           // 0 = no per-key cap
  std::uint64_t rpm = 0;                   // 0 = no per-key rate
  std::uint64_t tpm = 0;                   // 0 = no per-key token rate
  std::atomic<std::uint64_t> in_use{0};
  std::mutex mu;                           // guards requests and tokens
  std::optional<token_bucket> requests;    // rpm per minute; absent when rpm is 0
  std::optional<token_bucket> tokens;      // tpm per minute; absent when tpm is 0
};
}  // namespace detail

// What a permit reserved and, once known, what its request used: settled when it ends.
struct permit_usage {
  std::uint64_t lease = 0;            // the shared concurrency slot (0: none)
  std::uint64_t reserved_tokens = 0;  // charged to the tpm bucket at admission
  std::optional<std::uint64_t> used_tokens;  // reported by the request; absent: charge the reservation
};

class key_limits;

// An authenticated client. Cheap to copy; valid while its client_keys lives.
class key_handle {
 public:
  key_handle() = default;
  const std::string& name() const { return entry_->name; }
  // The tenant the key's stored responses belong to (docs/security.md): derived from the key
  // itself, so no rename, reordering or second key of the same name can ever give it to another.
  const std::string& tenant() const { return entry_->tenant; }
  std::uint64_t max_streams() const { return entry_->max_streams; }
  std::uint64_t rpm() const { return entry_->rpm; }
  std::uint64_t tpm() const { return entry_->tpm; }
  std::size_t index() const { return entry_->index; }
  std::uint64_t in_use() const { return entry_->in_use.load(std::memory_order_relaxed); }
  // The key's identity, the same for every handle and permit of the key while client_keys lives
  // (its admission queue lane); null for an empty handle.
  const void* identity() const noexcept { return entry_ ? entry_->identity : nullptr; }
  explicit operator bool() const noexcept { return entry_ != nullptr; }

 private:
  friend class client_keys;
  friend class key_limits;
  explicit key_handle(detail::key_entry* e) : entry_(e) {}
  detail::key_entry* entry_ = nullptr;
};

// One of the key's concurrent streams, plus the rate headers to send on the response. RAII:
// the destructor gives the stream back. Movable, not copyable; may be destroyed on any thread.
class key_permit {
 public:
  key_permit() = default;
  key_permit(key_permit&& o) noexcept
      : headers(std::move(o.headers)),
        owner_(std::exchange(o.owner_, nullptr)),
        entry_(std::exchange(o.entry_, nullptr)),
        usage_(o.usage_) {}
  key_permit& operator=(key_permit&& o) noexcept;
  key_permit(const key_permit&) = delete;
  key_permit& operator=(const key_permit&) = delete;
  ~key_permit() { reset(); }

  explicit operator bool() const noexcept { return entry_ != nullptr; }
  // The key's identity, as key_handle::identity() (the request's queue lane), whichever copy of
  // the keys (shared, or this replica's share) admitted it; null once reset.
  const void* identity() const noexcept { return entry_ ? entry_->identity : nullptr; }
  // Gives the stream back now (and settles its tokens).
  void reset() noexcept;
  // The tokens the request used, once known: the end settles the reservation to this (a refund
  // when it is less). Without it the reservation stands.
  void used_tokens(std::uint64_t n) noexcept { usage_.used_tokens = n; }
  std::uint64_t reserved_tokens() const noexcept { return usage_.reserved_tokens; }

  // The rate headers as of this request (empty when the key has no rpm or tpm limit).
  rate_headers headers;

 private:
  friend class key_limits;
  key_permit(key_limits* owner, detail::key_entry* e, rate_headers h, permit_usage u)
      : headers(std::move(h)), owner_(owner), entry_(e), usage_(u) {}
  key_limits* owner_ = nullptr;
  detail::key_entry* entry_ = nullptr;
  permit_usage usage_;
};

// Which limit refused a request. `unavailable`: the shared limits could not decide (Redis down)
// and the failure mode is `closed` (a 503, not a 429).
enum class rate_limit_kind { concurrency, rpm, tpm, unavailable };
std::string_view to_string(rate_limit_kind k) noexcept;

// A 429 (or the 503 of `unavailable`): which limit, when to retry (Retry-After, >= 1s), and the
// headers to send.
struct rate_refusal {
  rate_limit_kind which = rate_limit_kind::rpm;
  std::chrono::seconds retry_after{1};
  rate_headers headers;
};

using key_decision = std::variant<key_permit, rate_refusal>;

// The x-ratelimit-* values of a key's buckets (absent: no such limit).
rate_headers bucket_headers(const std::optional<token_bucket>& requests, const std::optional<token_bucket>& tokens);

// One request's decision on a key's counters, under their owner's lock, with the buckets refilled
// to now: a refusal (nothing charged), or nullopt once one request and `tokens` are charged (the
// caller then counts the stream). `in_use` is the key's streams now; max_streams 0: no cap.
std::optional<rate_refusal> decide_on(std::uint64_t max_streams, std::uint64_t in_use,
                                      std::optional<token_bucket>& requests, std::optional<token_bucket>& tokens,
                                      std::uint64_t cost);

// A permit's end settles its tokens: a refund when it used less than it reserved, more when more.
void settle_tokens(token_bucket& tokens, const permit_usage& u);

// The client-key limits as the pipeline sees them: the seam where limits shared by every replica
// (through Redis) replace the local ones below without the pipeline changing. Thread-safe.
class key_limits {
 public:
  virtual ~key_limits() = default;
  // The whole Authorization header value ("Bearer <key>"). Missing or unknown -> unauthorized.
  virtual result<key_handle> authenticate_header(std::string_view authorization) const = 0;
  // One request for `key` that may use up to `tokens` (its estimate, reserved from a tpm budget):
  // a permit (its concurrency slot, its rates charged) or a refusal that charges nothing. The
  // decision when this process can make it alone, without waiting (the local limits always can);
  // nullopt: call acquire().
  virtual std::optional<key_decision> try_acquire_now(const key_handle& key, std::uint64_t tokens) = 0;
  // The same decision, after a round trip to the shared store when need be. Call it on a worker
  // thread of the gateway's pool.
  virtual task<key_decision> acquire(const key_handle& key, std::uint64_t tokens) = 0;

 protected:
  friend class key_permit;
  static detail::key_entry& entry_of(const key_handle& h) noexcept { return *h.entry_; }
  key_permit make_permit(detail::key_entry& e, rate_headers h, permit_usage u) {
    return key_permit(this, &e, std::move(h), u);
  }
  // A permit ended: give its concurrency slot back and settle its tokens.
  virtual void release(detail::key_entry& e, const permit_usage& u) noexcept = 0;
};

// The local limits: keys from the keys file, their counters in this process.
class client_keys final : public key_limits {
 public:
  using clock = std::chrono::steady_clock;
  using now_fn = std::function<clock::time_point()>;

  // No keys: enabled() is false and authenticate() refuses everything.
  explicit client_keys(now_fn now = {});
  client_keys(client_keys&&) noexcept = default;
  client_keys& operator=(client_keys&&) noexcept = default;

  // The keys file format: one key per line, `<key> <max_streams> <rpm> [name] [tpm=<n>]`,
  // separated by spaces or tabs; `#` starts a comment; 0 means unlimited; a UTF-8 byte-order mark
  // at the top is skipped. Two keys may not share a name (an explicit one or the default
  // `key-<line>`). Errors name the line, never the key.
  static result<client_keys> parse(std::string_view text, now_fn now = {});
  static result<client_keys> load_file(const std::string& path, now_fn now = {});

  // The same keys with every limit divided by `n` (rounded up; unlimited stays unlimited) and fresh
  // counters: what one of n replicas allows alone while the shared limits cannot decide.
  client_keys divided(std::uint64_t n) const;
  // The key at `index` (key_handle::index()), which must be < size().
  key_handle at(std::size_t index) const { return key_handle(keys_[index].get()); }
  // The SHA-256 of the key at `index`: what names its counters shared by a pod's processes.
  const std::array<unsigned char, 32>& digest(std::size_t index) const { return keys_[index]->digest; }

  bool enabled() const noexcept { return !keys_.empty(); }
  std::size_t size() const noexcept { return keys_.size(); }

  // The bare key (what follows "Bearer "). Missing or unknown -> errc::unauthorized. Runs in time
  // independent of which key matched and of the key's length (SHA-256, constant-time compare
  // against every key).
  result<key_handle> authenticate(std::string_view key) const;
  // The whole Authorization header value ("Bearer <key>", scheme case-insensitive).
  result<key_handle> authenticate_header(std::string_view authorization) const override;

  // One request for `key`: a concurrency slot, one request from its rpm bucket and `tokens` from
  // its tpm bucket, or a refusal that consumes none of them. Always decides at once.
  std::optional<key_decision> try_acquire_now(const key_handle& key, std::uint64_t tokens) override {
    return decide(key, tokens);
  }
  task<key_decision> acquire(const key_handle& key, std::uint64_t tokens) override;
  // `held_elsewhere`: the key's streams this replica holds outside these counters (through Redis,
  // for the copy that decides alone while Redis cannot): they count against max_streams too.
  key_decision decide(const key_handle& key, std::uint64_t tokens, std::uint64_t held_elsewhere = 0);
  // Lowers the buckets of the key at `index` to these levels where they are above (never raises).
  void lower_to(std::size_t index, std::uint64_t requests, std::uint64_t tokens);

  // The x-ratelimit-* values of a key's buckets, given their limits and what is left.
  static rate_headers make_headers(std::uint64_t rpm, double requests_left, duration requests_reset,
                                   std::uint64_t tpm, double tokens_left, duration tokens_reset);

 private:
  void release(detail::key_entry& e, const permit_usage& u) noexcept override;
  static result<void> add_line(client_keys& out, std::string_view line, std::size_t line_no);
  void add_entry(std::unique_ptr<detail::key_entry> e);

  now_fn now_;
  std::vector<std::unique_ptr<detail::key_entry>> keys_;
};

}  // namespace sluice::admission
