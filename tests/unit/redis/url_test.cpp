#include "redis/url.hpp"

#include <gtest/gtest.h>

namespace sluice::redis {
namespace {

TEST(RedisUrl, HostOnlyTakesTheDefaults) {
  auto e = parse_url("redis://cache.internal");
  ASSERT_TRUE(e) << e.err().message;
  EXPECT_FALSE(e->tls);
  EXPECT_EQ(e->host, "cache.internal");
  EXPECT_EQ(e->port, 6379);
  EXPECT_EQ(e->db, 0u);
  EXPECT_TRUE(e->user.empty());
  EXPECT_TRUE(e->password.empty());
}

TEST(RedisUrl, EveryPart) {
  auto e = parse_url("rediss://gateway:s3cr%40t%3A@10.0.0.5:6380/3");
  ASSERT_TRUE(e) << e.err().message;
  EXPECT_TRUE(e->tls);
  EXPECT_EQ(e->user, "gateway");
  EXPECT_EQ(e->password, "s3cr@t:");
  EXPECT_EQ(e->host, "10.0.0.5");
  EXPECT_EQ(e->port, 6380);
  EXPECT_EQ(e->db, 3u);
  EXPECT_EQ(e->to_string(), "rediss://10.0.0.5:6380/3");  // never the credentials
}

TEST(RedisUrl, PasswordOnlyAndUserOnly) {
  auto e = parse_url("redis://:pw@localhost:1234");
  ASSERT_TRUE(e);
  EXPECT_TRUE(e->user.empty());
  EXPECT_EQ(e->password, "pw");
  auto u = parse_url("redis://alice@localhost/");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->user, "alice");
  EXPECT_TRUE(u->password.empty());
  EXPECT_EQ(u->db, 0u);
}

TEST(RedisUrl, PasswordMayHoldAnAt) {
  auto e = parse_url("redis://u:p@ss@h:1/0");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->password, "p@ss");
  EXPECT_EQ(e->host, "h");
}

TEST(RedisUrl, Ipv6) {
  auto e = parse_url("redis://[::1]:7000/1");
  ASSERT_TRUE(e) << e.err().message;
  EXPECT_EQ(e->host, "::1");
  EXPECT_EQ(e->port, 7000);
  EXPECT_EQ(e->to_string(), "redis://[::1]:7000/1");
  auto d = parse_url("redis://[::1]");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->port, 6379);
}

TEST(RedisUrl, Rejects) {
  for (const char* text : {"", "http://h", "redis:/h", "redis://", "redis://:6379", "redis://h:", "redis://h:0",
                           "redis://h:65536", "redis://h:12x", "redis://h/x", "redis://h/1/2", "redis://h/-1",
                           "redis://h?db=1", "redis://h#x", "redis://h h", "redis://h\n", "redis://[::1",
                           "redis://[::1]x", "redis://::1:80", "redis://u:@h", "redis://u:%4@h", "redis://u:%zz@h"}) {
    EXPECT_FALSE(parse_url(text)) << text;
  }
}

TEST(RedisUrl, ErrorsNeverRepeatThePassword) {
  auto e = parse_url("redis://u:hunter2@h:bad");
  ASSERT_FALSE(e);
  EXPECT_EQ(e.err().message.find("hunter2"), std::string::npos) << e.err().message;
}

}  // namespace
}  // namespace sluice::redis
