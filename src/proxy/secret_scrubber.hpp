// secret_scrubber: masks the gateway's own credentials in bytes that came from an upstream, before
// they reach a client (error bodies, in-band error events). OpenAI's own 401 quotes pieces of the
// key it got ("Incorrect API key provided: sk-abcd****wxyz") and an upstream may echo the whole
// Authorization header, so every run of bytes that matches any `piece`-byte substring of a
// configured key is overwritten with '*', byte for byte: offsets, lengths and the SSE and JSON
// framing around it stay as they were. Built once from the configured keys; immutable afterwards
// and safe to use from every thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace sluice::proxy {

class secret_scrubber {
 public:
  // The shortest piece of a key that counts as the key: enough to find a key in a leak search,
  // longer than the prefixes every key of a provider shares ("sk-", "sk-proj-" is 8: longer, but a
  // 6-byte window inside it is only masked where it is part of one of the gateway's keys).
  static constexpr std::size_t piece = 6;

  secret_scrubber() = default;
  // The raw key values (no "Bearer "); keys shorter than `piece` cannot be told from text and are
  // matched whole.
  explicit secret_scrubber(const std::vector<std::string>& keys);

  // What every masked run becomes in redact(): one fixed text, whatever the run's length, so the
  // answer does not tell how long the key is. No quote or backslash: JSON stays JSON.
  static constexpr std::string_view mask = "[redacted]";

  // Masks in place, byte for byte; returns the number of bytes masked. Quotes and backslashes are
  // never touched, so JSON stays JSON. Keeps lengths (the relay's buffer offsets), and so shows a
  // key's length: for what must keep its framing only, where redact() cannot go.
  std::size_t scrub(char* data, std::size_t n) const noexcept;
  std::size_t scrub(std::string& s) const noexcept { return scrub(s.data(), s.size()); }
  // `text` with each run of masked bytes replaced by `mask`; `masked` (optional) learns how many
  // bytes were. What the gateway relays whole (an upstream's error body) goes through this.
  std::string redact(std::string_view text, std::size_t* masked = nullptr) const;
  bool empty() const noexcept { return pieces_.empty() && short_keys_.empty(); }

 private:
  std::unordered_set<std::uint64_t> pieces_;  // each piece's 6 bytes packed little-endian
  std::vector<std::string> short_keys_;
};

// The key inside an Authorization header value ("Bearer <key>" -> "<key>").
std::string key_of_authorization(std::string_view header);

}  // namespace sluice::proxy
