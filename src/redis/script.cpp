#include "redis/script.hpp"

#include <openssl/evp.h>

#include <stdexcept>

namespace sluice::redis {

std::string sha1_hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha1(), nullptr) != 1) {
    throw std::runtime_error("SHA1 digest failed");
  }
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(len * 2);
  for (unsigned int i = 0; i < len; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 0xf];
  }
  return out;
}

script script::make(std::string name, std::string source) {
  script s;
  s.name = std::move(name);
  s.sha1 = sha1_hex(source);
  s.source = std::move(source);
  return s;
}

}  // namespace sluice::redis
