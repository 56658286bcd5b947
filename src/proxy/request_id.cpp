#include "proxy/request_id.hpp"

#include <random>

namespace sluice::proxy {

bool is_sane_request_id(std::string_view id) noexcept {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id) {
    bool okc = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
               c == '_' || c == '.' || c == ':';
    if (!okc) return false;
  }
  return true;
}

std::string generate_request_id() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char hex[] = "0123456789abcdef";
  std::string out(32, '0');
  for (int half = 0; half < 2; ++half) {
    std::uint64_t v = rng();
    for (int i = 0; i < 16; ++i) out[static_cast<std::size_t>(half * 16 + i)] = hex[(v >> (i * 4)) & 0xF];
  }
  return out;
}

std::string request_id_or_new(std::string_view id) {
  return is_sane_request_id(id) ? std::string(id) : generate_request_id();
}

}  // namespace sluice::proxy
