// shared_key_limits' pure parts: the key_admit reply and the Redis key names. The scripts
// themselves run against a real redis-server in tests/integration/shared_limits_test.cpp.
#include <gtest/gtest.h>

#include "admission/shared_key_limits.hpp"

using namespace sluice;
using namespace sluice::admission;

namespace {
redis::reply ints(std::initializer_list<std::int64_t> v) {
  std::vector<redis::reply> e;
  for (auto x : v) e.push_back(redis::reply::make_integer(x));
  return redis::reply::make_array(std::move(e));
}
}  // namespace

TEST(SharedKeyLimits, ParsesTheAdmitReply) {
  auto r = parse_key_admit(ints({0, 0, 11, 5000, 900, 6000, 3}));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->kind, 0);
  EXPECT_EQ(r->requests_left, 11);
  EXPECT_EQ(r->requests_reset_ms, 5000);
  EXPECT_EQ(r->tokens_left, 900);
  EXPECT_EQ(r->tokens_reset_ms, 6000);
  EXPECT_EQ(r->streams, 3);
  auto refused = parse_key_admit(ints({2, 4200, 0, 60000, 0, 0, 0}));
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->kind, 2);
  EXPECT_EQ(refused->wait_ms, 4200);
}

TEST(SharedKeyLimits, RefusesAnAdmitReplyOfAnotherShape) {
  EXPECT_FALSE(parse_key_admit(ints({0, 0, 1, 1, 1, 1})));           // too short
  EXPECT_FALSE(parse_key_admit(ints({4, 0, 1, 1, 1, 1, 1})));        // no such verdict
  EXPECT_FALSE(parse_key_admit(redis::reply::make_integer(1)));      // not an array
  EXPECT_FALSE(parse_key_admit(redis::reply::make_error("ERR x")));  // an error
  auto with_text = ints({0, 0, 1, 1, 1, 1, 1});
  with_text.elements[3] = redis::reply::make_string("soon");
  EXPECT_FALSE(parse_key_admit(with_text));
}

TEST(SharedKeyLimits, KeyNamesShareOneHashTagPerClientKey) {
  EXPECT_EQ(key_bucket_key("sluice:", "alpha"), "sluice:{k:alpha}:b");
  EXPECT_EQ(key_slots_key("sluice:", "alpha"), "sluice:{k:alpha}:s");
  // Braces (and anything else outside [A-Za-z0-9._-]) cannot close the tag early.
  EXPECT_EQ(key_bucket_key("p:", "a}b{c d"), "p:{k:a%7Db%7Bc%20d}:b");
  EXPECT_EQ(key_slots_key("", "team-1.prod_x"), "{k:team-1.prod_x}:s");
}
