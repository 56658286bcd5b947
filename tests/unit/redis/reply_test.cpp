#include "redis/reply.hpp"

#include <gtest/gtest.h>

#include <random>

using namespace std::string_view_literals;

namespace sluice::redis {
namespace {

std::vector<reply> parse_all(std::string_view bytes, reply_parser& p, std::size_t step = 0) {
  std::vector<reply> out;
  if (step == 0) step = bytes.size();
  for (std::size_t i = 0; i < bytes.size(); i += step) {
    p.feed(bytes.data() + i, std::min(step, bytes.size() - i));
    while (auto r = p.next()) out.push_back(std::move(*r));
  }
  return out;
}

constexpr std::string_view stream =
    "+OK\r\n"
    "-NOSCRIPT No matching script\r\n"
    ":-42\r\n"
    "$5\r\nhe\0lo\r\n"
    "$-1\r\n"
    "*3\r\n:1\r\n*2\r\n$1\r\na\r\n$-1\r\n+x\r\n"
    "*0\r\n"
    "*-1\r\n"sv;

void check(const std::vector<reply>& r) {
  ASSERT_EQ(r.size(), 8u);
  EXPECT_EQ(r[0].type, reply::kind::status);
  EXPECT_EQ(r[0].str, "OK");
  EXPECT_TRUE(r[1].is_error());
  EXPECT_EQ(r[1].str, "NOSCRIPT No matching script");
  EXPECT_EQ(r[2].type, reply::kind::integer);
  EXPECT_EQ(r[2].integer, -42);
  EXPECT_EQ(r[3].type, reply::kind::string);
  EXPECT_EQ(r[3].str, std::string("he\0lo", 5));  // binary-safe
  EXPECT_TRUE(r[4].is_nil());
  ASSERT_EQ(r[5].type, reply::kind::array);
  ASSERT_EQ(r[5].elements.size(), 3u);
  EXPECT_EQ(r[5].elements[0].integer, 1);
  ASSERT_EQ(r[5].elements[1].elements.size(), 2u);
  EXPECT_EQ(r[5].elements[1].elements[0].str, "a");
  EXPECT_TRUE(r[5].elements[1].elements[1].is_nil());
  EXPECT_EQ(r[5].elements[2].type, reply::kind::status);
  EXPECT_EQ(r[6].type, reply::kind::array);
  EXPECT_TRUE(r[6].elements.empty());
  EXPECT_TRUE(r[7].is_nil());  // a nil array
}

TEST(RedisReply, ParsesEveryKindInOneFeed) {
  reply_parser p;
  check(parse_all(stream, p));
  EXPECT_FALSE(p.failed());
}

TEST(RedisReply, ParsesByteByByte) {
  reply_parser p;
  check(parse_all(stream, p, 1));
  EXPECT_FALSE(p.next());
}

TEST(RedisReply, MalformedStreamIsAProtocolErrorThatStays) {
  reply_parser p;
  auto r = parse_all("+OK\r\n!bogus\r\n:1\r\n", p);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_TRUE(p.failed());
  EXPECT_FALSE(p.error().empty());
  p.feed("+OK\r\n", 5);
  EXPECT_FALSE(p.next());
  p.reset();
  EXPECT_FALSE(p.failed());
  EXPECT_EQ(parse_all("+OK\r\n", p).size(), 1u);
}

TEST(RedisReply, AsInteger) {
  EXPECT_EQ(reply::make_integer(7).as_integer(), 7);
  EXPECT_EQ(reply::make_string("-12").as_integer(), -12);
  EXPECT_EQ(reply::make_status("3").as_integer(), 3);
  EXPECT_FALSE(reply::make_string("3x").as_integer());
  EXPECT_FALSE(reply::make_string("").as_integer());
  EXPECT_FALSE(reply::make_error("1").as_integer());
  EXPECT_FALSE(reply{}.as_integer());
}

TEST(RedisReply, Describe) {
  EXPECT_EQ(reply{}.describe(), "nil");
  EXPECT_EQ(reply::make_integer(3).describe(), "int 3");
  EXPECT_EQ(reply::make_error("ERR x").describe(), "err \"ERR x\"");
  EXPECT_EQ(reply::make_array({reply::make_string("a"), reply{}}).describe(), "[str \"a\", nil]");
}

TEST(RedisCommand, EncodesAsAnArrayOfBulkStrings) {
  const std::string_view args[] = {"SET", "k", std::string_view("a\0b", 3), ""};
  EXPECT_EQ(format_command(args), std::string("*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\na\0b\r\n$0\r\n\r\n", 35));
  std::vector<std::string> many(40, "x");
  std::vector<std::string_view> views(many.begin(), many.end());
  const std::string out = format_command(views);
  EXPECT_EQ(out.substr(0, 5), "*40\r\n");
  EXPECT_EQ(out.size(), 5 + 40 * 7u);  // "$1\r\nx\r\n" per argument
}

TEST(RedisCommand, RoundTripsThroughTheParser) {
  // A command is a valid RESP array: the reply parser reads it back.
  const std::string_view args[] = {"EVALSHA", "abc", "1", "key"};
  reply_parser p;
  auto r = parse_all(format_command(args), p);
  ASSERT_EQ(r.size(), 1u);
  ASSERT_EQ(r[0].elements.size(), 4u);
  EXPECT_EQ(r[0].elements[0].str, "EVALSHA");
  EXPECT_EQ(r[0].elements[3].str, "key");
}

}  // namespace
}  // namespace sluice::redis

namespace sluice::redis {
namespace {

// Random nested replies, encoded by hand as RESP2, fed in random slices: every reply comes back
// equal, in order.
reply random_reply(std::mt19937& rng, int depth) {
  switch (std::uniform_int_distribution<int>(0, depth > 2 ? 4 : 5)(rng)) {
    case 0: return reply{};
    case 1: return reply::make_integer(std::uniform_int_distribution<std::int64_t>(-1'000'000, 1'000'000)(rng));
    case 2: {
      std::string s(std::uniform_int_distribution<std::size_t>(0, 300)(rng), '\0');
      for (char& c : s) c = static_cast<char>(std::uniform_int_distribution<int>(0, 255)(rng));
      return reply::make_string(std::move(s));
    }
    case 3: return reply::make_status("OK" + std::to_string(rng() % 100));
    case 4: return reply::make_error("ERR " + std::to_string(rng() % 100));
    default: {
      std::vector<reply> v(std::uniform_int_distribution<std::size_t>(0, 5)(rng));
      for (auto& e : v) e = random_reply(rng, depth + 1);
      return reply::make_array(std::move(v));
    }
  }
}

void encode(const reply& r, std::string& out) {
  switch (r.type) {
    case reply::kind::nil: out += "$-1\r\n"; break;
    case reply::kind::integer: out += ":" + std::to_string(r.integer) + "\r\n"; break;
    case reply::kind::string: out += "$" + std::to_string(r.str.size()) + "\r\n" + r.str + "\r\n"; break;
    case reply::kind::status: out += "+" + r.str + "\r\n"; break;
    case reply::kind::error: out += "-" + r.str + "\r\n"; break;
    case reply::kind::array:
      out += "*" + std::to_string(r.elements.size()) + "\r\n";
      for (const auto& e : r.elements) encode(e, out);
      break;
  }
}

bool same(const reply& a, const reply& b) {
  if (a.type != b.type || a.integer != b.integer || a.str != b.str || a.elements.size() != b.elements.size()) return false;
  for (std::size_t i = 0; i < a.elements.size(); ++i) {
    if (!same(a.elements[i], b.elements[i])) return false;
  }
  return true;
}

TEST(RedisReply, RandomRepliesInRandomSlices) {
  std::mt19937 rng(20261201);
  for (int round = 0; round < 50; ++round) {
    std::vector<reply> sent(20);
    std::string bytes;
    for (auto& r : sent) {
      r = random_reply(rng, 0);
      encode(r, bytes);
    }
    reply_parser p;
    std::vector<reply> got;
    for (std::size_t at = 0; at < bytes.size();) {
      const std::size_t n = std::min(bytes.size() - at, std::uniform_int_distribution<std::size_t>(1, 700)(rng));
      p.feed(bytes.data() + at, n);
      at += n;
      while (auto r = p.next()) got.push_back(std::move(*r));
    }
    ASSERT_FALSE(p.failed()) << p.error();
    ASSERT_EQ(got.size(), sent.size());
    for (std::size_t i = 0; i < sent.size(); ++i) EXPECT_TRUE(same(sent[i], got[i])) << round << " " << i;
  }
}

}  // namespace
}  // namespace sluice::redis
