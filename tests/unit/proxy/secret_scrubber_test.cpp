// proxy::secret_scrubber masks every 6-byte piece of the gateway's keys, byte for byte, in what
// an upstream says to a client: the whole key, OpenAI's masked quotes of it, pieces across text.
#include <gtest/gtest.h>

#include "proxy/secret_scrubber.hpp"

using sluice::proxy::key_of_authorization;
using sluice::proxy::secret_scrubber;

TEST(secret_scrubber, masks_the_key_and_its_pieces_byte_for_byte) {
  const std::string key = "sk-proj-abcdef0123456789XYZW";
  secret_scrubber s({key});
  std::string text = "Incorrect API key provided: sk-proj-****XYZW. Header: Bearer " + key + ". Ok.";
  const std::size_t size = text.size();
  EXPECT_GT(s.scrub(text), 0u);
  EXPECT_EQ(text.size(), size) << "lengths are kept (SSE and JSON framing stay as they were)";
  EXPECT_EQ(text.find("sk-proj"), std::string::npos) << text;
  EXPECT_EQ(text.find("abcdef"), std::string::npos) << text;
  EXPECT_NE(text.find("Incorrect API key provided: "), std::string::npos);
  EXPECT_NE(text.find(". Ok."), std::string::npos);
  // The 4-byte tail of a masked quote alone is not a piece of 6: left (it identifies nothing).
  EXPECT_NE(text.find("XYZW"), std::string::npos);
}

TEST(secret_scrubber, leaves_other_text_and_json_structure_alone) {
  secret_scrubber s({"sk-0123456789abcdef"});
  std::string json = R"({"error":{"message":"model not found","type":"invalid_request_error"}})";
  const std::string before = json;
  EXPECT_EQ(s.scrub(json), 0u);
  EXPECT_EQ(json, before);
  // Quotes and backslashes inside a match are kept, so a JSON string stays one.
  secret_scrubber odd({"ab\"cd\\efgh"});
  std::string t = R"(x ab"cd\efgh y)";
  odd.scrub(t);
  EXPECT_EQ(t, R"(x **"**\**** y)");
}

TEST(secret_scrubber, several_keys_short_keys_and_none) {
  secret_scrubber s({"first-key-000000", "second-key-11111", "tiny", ""});
  std::string t = "a first-key-000000 b second-key-11111 c tiny d";
  s.scrub(t);
  EXPECT_EQ(t, "a **************** b **************** c **** d");
  secret_scrubber none;
  EXPECT_TRUE(none.empty());
  std::string u = "anything at all";
  EXPECT_EQ(none.scrub(u), 0u);
}

TEST(secret_scrubber, key_of_an_authorization_header) {
  EXPECT_EQ(key_of_authorization("Bearer sk-abc"), "sk-abc");
  EXPECT_EQ(key_of_authorization("sk-abc"), "sk-abc");
}

TEST(secret_scrubber, redact_hides_the_key_and_its_length) {
  const std::string short_key = "sk-proj-abcdef0123", long_key = "sk-proj-abcdef0123456789abcdef0123456789";
  for (const auto& key : {short_key, long_key}) {
    secret_scrubber s({key});
    std::size_t masked = 0;
    const std::string out = s.redact(R"({"error":{"message":"Incorrect API key provided: )" + key + R"(. Ok."}})", &masked);
    EXPECT_GT(masked, 0u);
    EXPECT_EQ(out, R"({"error":{"message":"Incorrect API key provided: [redacted]. Ok."}})") << "the same for every key length";
  }
  secret_scrubber s({long_key});
  // OpenAI's own mask of the key: its pieces go, its stars and short tail stay.
  EXPECT_EQ(s.redact("key sk-proj-****6789 end"), "key [redacted]****6789 end");
  EXPECT_EQ(s.redact("nothing here"), "nothing here");
}
