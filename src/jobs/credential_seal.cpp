#include "jobs/credential_seal.hpp"

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <algorithm>
#include <memory>
#include <stdexcept>

namespace sluice::jobs {

namespace {

constexpr unsigned char version = 1;
constexpr std::size_t nonce_bytes = 12;
constexpr std::size_t tag_bytes = 16;
constexpr std::size_t min_secret_bytes = 32;

struct ctx_free {
  void operator()(EVP_CIPHER_CTX* c) const noexcept { EVP_CIPHER_CTX_free(c); }
};
using cipher_ctx = std::unique_ptr<EVP_CIPHER_CTX, ctx_free>;

const unsigned char* bytes(std::string_view s) { return reinterpret_cast<const unsigned char*>(s.data()); }

}  // namespace

result<credential_seal> credential_seal::from_secret(std::string_view secret) {
  if (secret.size() < min_secret_bytes)
    return error::make(errc::bad_request, "the queue secret must be at least 32 bytes (e.g. 64 hex digits)");
  credential_seal s;
  SHA256(bytes(secret), secret.size(), s.key_.data());
  return s;
}

std::string credential_seal::seal(std::string_view plain, std::string_view bound_to) const {
  std::string out(1 + nonce_bytes + plain.size() + tag_bytes, '\0');
  auto* o = reinterpret_cast<unsigned char*>(out.data());
  o[0] = version;
  // A failure here is the process's (no entropy, no memory): a bug's path, caught at the boundary.
  if (RAND_bytes(o + 1, nonce_bytes) != 1) throw std::runtime_error("RAND_bytes failed");
  cipher_ctx c(EVP_CIPHER_CTX_new());
  int n = 0;
  bool ok = c && EVP_EncryptInit_ex(c.get(), EVP_aes_256_gcm(), nullptr, key_.data(), o + 1) == 1 &&
            EVP_EncryptUpdate(c.get(), nullptr, &n, bytes(bound_to), static_cast<int>(bound_to.size())) == 1 &&
            EVP_EncryptUpdate(c.get(), o + 1 + nonce_bytes, &n, bytes(plain), static_cast<int>(plain.size())) == 1 &&
            EVP_EncryptFinal_ex(c.get(), o + 1 + nonce_bytes + n, &n) == 1 &&
            EVP_CIPHER_CTX_ctrl(c.get(), EVP_CTRL_GCM_GET_TAG, tag_bytes, o + 1 + nonce_bytes + plain.size()) == 1;
  if (!ok) throw std::runtime_error("AES-256-GCM seal failed");
  return out;
}

std::optional<std::string> credential_seal::open(std::string_view sealed, std::string_view bound_to) const {
  if (sealed.size() < 1 + nonce_bytes + tag_bytes || static_cast<unsigned char>(sealed[0]) != version) return std::nullopt;
  const auto* in = bytes(sealed);
  const std::size_t text = sealed.size() - 1 - nonce_bytes - tag_bytes;
  std::string out(text, '\0');
  auto* o = reinterpret_cast<unsigned char*>(out.data());
  std::array<unsigned char, tag_bytes> tag{};
  std::copy_n(in + 1 + nonce_bytes + text, tag_bytes, tag.begin());
  cipher_ctx c(EVP_CIPHER_CTX_new());
  int n = 0;
  const bool ok = c && EVP_DecryptInit_ex(c.get(), EVP_aes_256_gcm(), nullptr, key_.data(), in + 1) == 1 &&
                  EVP_DecryptUpdate(c.get(), nullptr, &n, bytes(bound_to), static_cast<int>(bound_to.size())) == 1 &&
                  EVP_DecryptUpdate(c.get(), o, &n, in + 1 + nonce_bytes, static_cast<int>(text)) == 1 &&
                  EVP_CIPHER_CTX_ctrl(c.get(), EVP_CTRL_GCM_SET_TAG, tag_bytes, tag.data()) == 1 &&
                  EVP_DecryptFinal_ex(c.get(), o + n, &n) == 1;  // the tag is checked here
  if (!ok) return std::nullopt;
  return out;
}

}  // namespace sluice::jobs
