// shared_key_limits' pure part: the Redis key names of a client key (the scripts and their reply:
// tests/unit/redis/buckets_test.cpp and tests/integration/shared_limits_test.cpp).
#include <gtest/gtest.h>

#include "admission/shared_key_limits.hpp"

using namespace sluice;
using namespace sluice::admission;

TEST(SharedKeyLimits, KeyNamesShareOneHashTagPerClientKey) {
  EXPECT_EQ(key_bucket_key("sluice:", "alpha"), "sluice:{k:alpha}:b");
  EXPECT_EQ(key_slots_key("sluice:", "alpha"), "sluice:{k:alpha}:s");
  // Braces (and anything else outside [A-Za-z0-9._-]) cannot close the tag early.
  EXPECT_EQ(key_bucket_key("p:", "a}b{c d"), "p:{k:a%7Db%7Bc%20d}:b");
  EXPECT_EQ(key_slots_key("", "team-1.prod_x"), "{k:team-1.prod_x}:s");
}
