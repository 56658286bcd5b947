// jobs::credential_seal: a sealed credential opens with the same secret and job id only; any byte
// changed, another key or another job id refuses it; the ciphertext never shows the credential.
#include "jobs/credential_seal.hpp"

#include <gtest/gtest.h>

using namespace sluice;

namespace {
const std::string kSecret(64, 'a');
const std::string kCredential = "Bearer sk-client-own-key-123";
}  // namespace

TEST(CredentialSeal, RoundTripsUnderTheSameSecretAndJob) {
  auto s = jobs::credential_seal::from_secret(kSecret);
  ASSERT_TRUE(s.has_value());
  const std::string sealed = s->seal(kCredential, "resp_1");
  EXPECT_EQ(sealed.find("sk-client"), std::string::npos);
  EXPECT_EQ(sealed.size(), 1 + 12 + kCredential.size() + 16);
  auto opened = s->open(sealed, "resp_1");
  ASSERT_TRUE(opened.has_value());
  EXPECT_EQ(*opened, kCredential);
  EXPECT_NE(s->seal(kCredential, "resp_1"), sealed) << "a fresh nonce each time";
}

TEST(CredentialSeal, DetectsEveryChangedByte) {
  auto s = jobs::credential_seal::from_secret(kSecret);
  ASSERT_TRUE(s.has_value());
  const std::string sealed = s->seal(kCredential, "resp_1");
  for (std::size_t i = 0; i < sealed.size(); ++i) {
    std::string t = sealed;
    t[i] = static_cast<char>(t[i] ^ 0x01);
    EXPECT_FALSE(s->open(t, "resp_1").has_value()) << "byte " << i;
  }
  EXPECT_FALSE(s->open(sealed.substr(0, sealed.size() - 1), "resp_1").has_value());
  EXPECT_FALSE(s->open("", "resp_1").has_value());
}

TEST(CredentialSeal, RefusesAnotherKeyOrAnotherJob) {
  auto s = jobs::credential_seal::from_secret(kSecret);
  auto other = jobs::credential_seal::from_secret(std::string(64, 'b'));
  ASSERT_TRUE(s.has_value() && other.has_value());
  const std::string sealed = s->seal(kCredential, "resp_1");
  EXPECT_FALSE(other->open(sealed, "resp_1").has_value());
  EXPECT_FALSE(s->open(sealed, "resp_2").has_value());
}

TEST(CredentialSeal, RefusesAShortSecret) {
  EXPECT_FALSE(jobs::credential_seal::from_secret("short").has_value());
  EXPECT_FALSE(jobs::credential_seal::from_secret(std::string(31, 'x')).has_value());
}
