// jobs::credential_seal: a client's own upstream credential sealed for the job queue (--queue redis,
// pass-through mode) with AES-256-GCM under a key Redis never sees (queue-secret-env), so that the
// credential rests in Redis only as ciphertext. Immutable once made; any thread.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace sluice::jobs {

class credential_seal {
 public:
  // The key is SHA-256 of `secret` (at least 32 bytes: a fleet's shared secret, e.g. 64 hex digits).
  static result<credential_seal> from_secret(std::string_view secret);

  // version byte, 96-bit random nonce, ciphertext, 128-bit tag; `bound_to` (the job's id) is the
  // associated data: a sealed value moved to another job does not open.
  std::string seal(std::string_view plain, std::string_view bound_to) const;
  // The plain text; nullopt when tampered with, sealed under another key or for another job.
  std::optional<std::string> open(std::string_view sealed, std::string_view bound_to) const;

 private:
  std::array<unsigned char, 32> key_{};
};

}  // namespace sluice::jobs
