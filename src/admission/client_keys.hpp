// admission::client_keys: optional API keys, each with its own concurrent-stream cap and
// requests-per-minute bucket. Loaded once at start-up, then immutable except for the per-key
// counters (a small mutex per key), so it is safe from every worker thread. Keys are never
// logged and never appear in error messages. client_keys must outlive every handle and permit.
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

namespace sluice::admission {

// The x-ratelimit-*-requests header values for one key (absent when the key has no rpm limit).
struct rate_headers {
  std::uint64_t limit = 0;      // x-ratelimit-limit-requests
  std::uint64_t remaining = 0;  // x-ratelimit-remaining-requests
  std::string reset;            // x-ratelimit-reset-requests: until the bucket is full again, written
                                // by format_openai_duration (core/openai_duration.hpp)
};

namespace detail {
struct key_entry {
  std::array<unsigned char, 32> digest{};  // SHA-256 of the key; the key itself is not kept
  std::string name;                        // safe to log: from the file, or "key-<line>"
  std::uint64_t max_streams = 0;           // 0 = no per-key cap
  std::uint64_t rpm = 0;                   // 0 = no per-key rate
  std::atomic<std::uint64_t> in_use{0};
  std::mutex mu;                           // guards requests
  std::optional<token_bucket> requests;    // rpm per minute; absent when rpm is 0
};
}  // namespace detail

class key_limits;

// An authenticated client. Cheap to copy; valid while its client_keys lives.
class key_handle {
 public:
  key_handle() = default;
  const std::string& name() const { return entry_->name; }
  std::uint64_t max_streams() const { return entry_->max_streams; }
  std::uint64_t rpm() const { return entry_->rpm; }
  std::uint64_t in_use() const { return entry_->in_use.load(std::memory_order_relaxed); }
  // The key's identity, the same for every handle and permit of the key while client_keys lives
  // (its admission queue lane); null for an empty handle.
  const void* identity() const noexcept { return entry_; }
  explicit operator bool() const noexcept { return entry_ != nullptr; }

 private:
  friend class client_keys;
  explicit key_handle(detail::key_entry* e) : entry_(e) {}
  detail::key_entry* entry_ = nullptr;
};

// One of the key's concurrent streams, plus the rate headers to send on the response. RAII:
// the destructor gives the stream back. Movable, not copyable; may be destroyed on any thread.
class key_permit {
 public:
  key_permit() = default;
  key_permit(key_permit&& o) noexcept
      : headers(std::move(o.headers)), owner_(std::exchange(o.owner_, nullptr)), entry_(std::exchange(o.entry_, nullptr)) {}
  key_permit& operator=(key_permit&& o) noexcept;
  key_permit(const key_permit&) = delete;
  key_permit& operator=(const key_permit&) = delete;
  ~key_permit() { reset(); }

  explicit operator bool() const noexcept { return entry_ != nullptr; }
  // The key's identity, as key_handle::identity() (the request's queue lane); null once reset.
  const void* identity() const noexcept { return entry_; }
  // Gives the stream back now.
  void reset() noexcept;

  // The rate headers as of this request (absent when the key has no rpm limit).
  std::optional<rate_headers> headers;

 private:
  friend class key_limits;
  key_permit(key_limits* owner, detail::key_entry* e, std::optional<rate_headers> h)
      : headers(std::move(h)), owner_(owner), entry_(e) {}
  key_limits* owner_ = nullptr;
  detail::key_entry* entry_ = nullptr;
};

enum class rate_limit_kind { concurrency, rpm };
std::string_view to_string(rate_limit_kind k) noexcept;

// A 429: which limit, when to retry (Retry-After, >= 1s), and the headers to send.
struct rate_refusal {
  rate_limit_kind which = rate_limit_kind::rpm;
  std::chrono::seconds retry_after{1};
  std::optional<rate_headers> headers;
};

// The client-key limits as the pipeline sees them: the seam where limits shared by every replica
// (through Redis) replace the local ones below without the pipeline changing. Thread-safe.
class key_limits {
 public:
  virtual ~key_limits() = default;
  // The whole Authorization header value ("Bearer <key>"). Missing or unknown -> unauthorized.
  virtual result<key_handle> authenticate_header(std::string_view authorization) const = 0;
  // One request for `key`: a permit (its concurrency slot, its rate charged) or a refusal that
  // charges nothing.
  virtual std::variant<key_permit, rate_refusal> try_acquire(const key_handle& key) = 0;

 protected:
  friend class key_permit;
  key_permit make_permit(detail::key_entry& e, std::optional<rate_headers> h) { return key_permit(this, &e, std::move(h)); }
  // A permit ended: give its concurrency slot back.
  virtual void release(detail::key_entry& e) noexcept = 0;
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

  // The keys file format: one key per line, `<key> <max_streams> <rpm> [name]`, separated by
  // spaces or tabs; `#` starts a comment; 0 means unlimited. Errors name the line, never the key.
  static result<client_keys> parse(std::string_view text, now_fn now = {});
  static result<client_keys> load_file(const std::string& path, now_fn now = {});

  bool enabled() const noexcept { return !keys_.empty(); }
  std::size_t size() const noexcept { return keys_.size(); }

  // The bare key (what follows "Bearer "). Missing or unknown -> errc::unauthorized. Runs in time
  // independent of which key matched and of the key's length (SHA-256, constant-time compare
  // against every key).
  result<key_handle> authenticate(std::string_view key) const;
  // The whole Authorization header value ("Bearer <key>", scheme case-insensitive).
  result<key_handle> authenticate_header(std::string_view authorization) const override;

  // One request for `key`: a concurrency slot and one token from its per-minute bucket, or a
  // refusal that consumes neither.
  std::variant<key_permit, rate_refusal> try_acquire(const key_handle& key) override;

 private:
  void release(detail::key_entry& e) noexcept override;
  static result<void> add_line(client_keys& out, std::string_view line, std::size_t line_no);
  static std::optional<rate_headers> headers_locked(const detail::key_entry& e);

  now_fn now_;
  std::vector<std::unique_ptr<detail::key_entry>> keys_;
};

}  // namespace sluice::admission
