#include "proxy/secret_scrubber.hpp"

#include <cstring>

namespace sluice::proxy {

namespace {
std::uint64_t pack(const char* p) noexcept {
  std::uint64_t v = 0;
  std::memcpy(&v, p, secret_scrubber::piece);
  return v;
}
bool keep(char c) noexcept { return c == '"' || c == '\\'; }
}  // namespace

secret_scrubber::secret_scrubber(const std::vector<std::string>& keys) {
  for (const auto& k : keys) {
    if (k.empty()) continue;
    if (k.size() < piece) {
      short_keys_.push_back(k);
      continue;
    }
    for (std::size_t i = 0; i + piece <= k.size(); ++i) pieces_.insert(pack(k.data() + i));
  }
}

std::size_t secret_scrubber::scrub(char* data, std::size_t n) const noexcept {
  std::size_t masked = 0;
  auto mask = [&](std::size_t from, std::size_t to) {
    for (std::size_t j = from; j < to; ++j)
      if (data[j] != '*' && !keep(data[j])) {
        data[j] = '*';
        ++masked;
      }
  };
  if (!pieces_.empty() && n >= piece) {
    // Mark first, mask after: masking as we go would break the next window's match.
    std::vector<bool> hit(n, false);
    bool any = false;
    for (std::size_t i = 0; i + piece <= n; ++i)
      if (pieces_.count(pack(data + i))) {
        for (std::size_t j = i; j < i + piece; ++j) hit[j] = true;
        any = true;
      }
    if (any)
      for (std::size_t i = 0; i < n; ++i)
        if (hit[i]) mask(i, i + 1);
  }
  for (const auto& k : short_keys_) {
    for (std::size_t i = 0; i + k.size() <= n; ++i)
      if (std::memcmp(data + i, k.data(), k.size()) == 0) mask(i, i + k.size());
  }
  return masked;
}

std::string secret_scrubber::redact(std::string_view text, std::size_t* masked) const {
  // The in-place pass marks each masked byte '*'; a '*' that was there before is told apart by
  // comparing with the original.
  std::string marked(text);
  const std::size_t n = scrub(marked);
  if (masked) *masked = n;
  if (n == 0) return marked;
  std::string out;
  out.reserve(text.size());
  bool in_run = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const bool hit = marked[i] == '*' && text[i] != '*';
    if (hit && !in_run) out.append(mask);
    if (!hit) out.push_back(text[i]);
    in_run = hit;
  }
  return out;
}

std::string key_of_authorization(std::string_view header) {
  constexpr std::string_view bearer = "Bearer ";
  if (header.substr(0, bearer.size()) == bearer) header.remove_prefix(bearer.size());
  return std::string(header);
}

}  // namespace sluice::proxy
