// The shared buckets' pure parts: bucket_admit's reply and the key names. The scripts themselves
// run against a real redis-server in tests/integration/shared_limits_test.cpp.
#include <gtest/gtest.h>

#include "redis/buckets.hpp"

using namespace sluice;
using namespace sluice::redis;

namespace {
reply ints(std::initializer_list<std::int64_t> v) {
  std::vector<reply> e;
  for (auto x : v) e.push_back(reply::make_integer(x));
  return reply::make_array(std::move(e));
}
}  // namespace

TEST(Buckets, ParsesTheAdmitReply) {
  auto r = parse_bucket_admit(ints({0, 0, 11, 5000, 900, 6000, 3}));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->verdict, bucket_verdict::admitted);
  EXPECT_EQ(r->requests_left, 11);
  EXPECT_EQ(r->requests_reset_ms, 5000);
  EXPECT_EQ(r->tokens_left, 900);
  EXPECT_EQ(r->tokens_reset_ms, 6000);
  EXPECT_EQ(r->slots, 3);
  auto refused = parse_bucket_admit(ints({2, 4200, 0, 60000, 0, 0, 0}));
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->verdict, bucket_verdict::requests);
  EXPECT_EQ(refused->wait_ms, 4200);
  auto blocked = parse_bucket_admit(ints({4, 1500, 3, 0, 0, 0, 0}));
  ASSERT_TRUE(blocked);
  EXPECT_EQ(blocked->verdict, bucket_verdict::blocked);
}

TEST(Buckets, RefusesAnAdmitReplyOfAnotherShape) {
  EXPECT_FALSE(parse_bucket_admit(ints({0, 0, 1, 1, 1, 1})));       // too short
  EXPECT_FALSE(parse_bucket_admit(ints({5, 0, 1, 1, 1, 1, 1})));    // no such verdict
  EXPECT_FALSE(parse_bucket_admit(ints({-1, 0, 1, 1, 1, 1, 1})));
  EXPECT_FALSE(parse_bucket_admit(reply::make_integer(1)));          // not an array
  EXPECT_FALSE(parse_bucket_admit(reply::make_error("ERR x")));      // an error
  auto with_text = ints({0, 0, 1, 1, 1, 1, 1});
  with_text.elements[3] = reply::make_string("soon");
  EXPECT_FALSE(parse_bucket_admit(with_text));
}

TEST(Buckets, KeyNamesCloseTheirHashTagWhateverTheName) {
  EXPECT_EQ(bucket_key("sluice:", "k", "alpha", "b"), "sluice:{k:alpha}:b");
  EXPECT_EQ(bucket_key("p:", "u", "a}b{c d", "s"), "p:{u:a%7Db%7Bc%20d}:s");
  EXPECT_EQ(bucket_key("", "k", "team-1.prod_x", "s"), "{k:team-1.prod_x}:s");
}

TEST(Buckets, TheThreeScriptsShareTheirPreludeButNotTheirSha) {
  auto a = bucket_admit_script("a"), s = bucket_settle_script("s"), o = bucket_observe_script("o");
  EXPECT_EQ(a.name, "a");
  EXPECT_NE(a.sha1, s.sha1);
  EXPECT_NE(s.sha1, o.sha1);
  EXPECT_NE(a.source.find("redis.call('TIME')"), std::string::npos);
  EXPECT_EQ(bucket_admit_script("other").sha1, a.sha1);  // the name is only a label
}
