// The one base-URL parser (config/url.hpp), as the upstream module uses it: schemes, hosts, IPv6
// literals, ports, base paths, and what it refuses.
#include <gtest/gtest.h>

#include "upstream/url.hpp"

using sluice::upstream::parse_url;

TEST(upstream_url, parses_scheme_host_port_and_base_path) {
  auto u = parse_url("https://api.openai.com");
  ASSERT_TRUE(u);
  EXPECT_TRUE(u->tls);
  EXPECT_EQ(u->host, "api.openai.com");
  EXPECT_EQ(u->port, 443);
  EXPECT_EQ(u->base_path, "");
  EXPECT_EQ(u->host_header(), "api.openai.com");

  u = parse_url("http://127.0.0.1:8081/v1/");
  ASSERT_TRUE(u);
  EXPECT_FALSE(u->tls);
  EXPECT_EQ(u->port, 8081);
  EXPECT_EQ(u->base_path, "/v1") << "trailing slashes go";
  EXPECT_EQ(u->host_header(), "127.0.0.1:8081");
  EXPECT_EQ(u->to_string(), "http://127.0.0.1:8081/v1");

  u = parse_url("http://[::1]:9000/gw");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->host_header(), "[::1]:9000");
  u = parse_url("http://[fe80::1]");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->port, 80);
  EXPECT_EQ(u->host_header(), "[fe80::1]");
  u = parse_url("https://h:443");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->host_header(), "h") << "the scheme's default port is left out of Host";
}

TEST(upstream_url, refuses_what_it_must_not_send_to) {
  for (const char* bad : {"ftp://h", "h:80", "http://", "http://:80", "http://h:0", "http://h:65536", "http://h:80x",
                          "http://h:", "http://[::1", "http://[::1]x", "http://[::1]:", "http://u:p@h",
                          "http://h/a?b=1", "http://h/#frag", "http://h/a b", "http://h/a\r\nX: y"}) {
    auto u = parse_url(bad);
    EXPECT_FALSE(u) << bad;
    if (!u) {
      EXPECT_EQ(u.err().code, sluice::errc::bad_request);
    }
  }
}

TEST(upstream_url, errors_never_echo_credentials_beyond_the_url_given) {
  auto u = parse_url("http://user:secret@h");
  ASSERT_FALSE(u);
  EXPECT_NE(u.err().message.find("credentials"), std::string::npos);
}

TEST(upstream_url, a_query_only_where_allowed_and_never_in_logs) {
  auto az = parse_url("https://res.openai.azure.com/openai/?api-version=2024-10-21", config::query_rule::allowed);
  ASSERT_TRUE(az);
  EXPECT_EQ(az->base_path, "/openai");
  EXPECT_EQ(az->query, "api-version=2024-10-21");
  EXPECT_EQ(az->to_string().find("api-version"), std::string::npos);
  EXPECT_FALSE(parse_url("https://h/a?", config::query_rule::allowed)) << "an empty query";
  EXPECT_FALSE(parse_url("https://h/a?x=1#f", config::query_rule::allowed)) << "a fragment";
  EXPECT_FALSE(parse_url("https://h/a?x=1")) << "refused by default (engine metrics, load targets)";
  EXPECT_TRUE(parse_url("https://h/a")->query.empty());
}
