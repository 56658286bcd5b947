#include "proxy/request_id.hpp"

#include <openssl/rand.h>

#include <algorithm>
#include <random>
#include <stdexcept>

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
  for (std::size_t half = 0; half < 2; ++half) {
    std::uint64_t v = rng();
    for (std::size_t i = 0; i < 16; ++i) out[half * 16 + i] = hex[(v >> (i * 4)) & 0xF];
  }
  return out;
}

std::string request_id_or_new(std::string_view id) {
  return is_sane_request_id(id) ? std::string(id) : generate_request_id();
}

std::string new_response_id() { return new_random_id("resp_"); }

bool is_gateway_response_id(std::string_view id) noexcept {
  constexpr std::string_view prefix = "resp_";
  if (id.size() != prefix.size() + 32 || !id.starts_with(prefix)) return false;
  return std::all_of(id.begin() + prefix.size(), id.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string new_random_id(std::string_view prefix) {
  unsigned char raw[16];
  if (RAND_bytes(raw, sizeof raw) != 1) throw std::runtime_error("RAND_bytes failed");
  static constexpr char hex[] = "0123456789abcdef";
  std::string id(prefix);
  for (unsigned char b : raw) {
    id.push_back(hex[b >> 4]);
    id.push_back(hex[b & 0xF]);
  }
  return id;
}

}  // namespace sluice::proxy
