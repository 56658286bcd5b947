// The connection cap derived from the descriptor limit when max-connections is left at 0.
#include <gtest/gtest.h>

#include <limits>

#include "config/option_table.hpp"
#include "http/server_options.hpp"

using sluice::http::effective_max_connections;
using sluice::http::fd_reserve;
using sluice::http::max_connections_cap;

TEST(effective_max_connections, an_explicit_value_wins_whatever_the_fd_limit) {
  EXPECT_EQ(effective_max_connections(3, 1024), 3u);
  EXPECT_EQ(effective_max_connections(50000, 1024), 50000u);  // honoured (the server warns)
  EXPECT_EQ(effective_max_connections(7, 0), 7u);
}

TEST(effective_max_connections, auto_is_half_of_what_the_reserve_leaves) {
  EXPECT_EQ(effective_max_connections(0, 1024), (1024 - fd_reserve) / 2);
  EXPECT_EQ(effective_max_connections(0, 1024), 480u);
  EXPECT_EQ(effective_max_connections(0, 20000), 9968u);  // this VM's hard limit
  EXPECT_EQ(effective_max_connections(0, 4097), (4097 - fd_reserve) / 2);  // rounds down
}

TEST(effective_max_connections, auto_never_exceeds_the_cap) {
  EXPECT_EQ(effective_max_connections(0, 2 * max_connections_cap + fd_reserve), max_connections_cap);
  EXPECT_EQ(effective_max_connections(0, 1048576), max_connections_cap);
  EXPECT_EQ(effective_max_connections(0, std::numeric_limits<std::uint64_t>::max()), max_connections_cap);  // RLIM_INFINITY
}

TEST(effective_max_connections, auto_with_an_unknown_limit_is_the_cap) {
  EXPECT_EQ(effective_max_connections(0, 0), max_connections_cap);
}

TEST(effective_max_connections, auto_with_a_tiny_limit_still_allows_one) {
  EXPECT_EQ(effective_max_connections(0, fd_reserve + 3), 1u);
  EXPECT_EQ(effective_max_connections(0, fd_reserve), 1u);
  EXPECT_EQ(effective_max_connections(0, 1), 1u);
}

TEST(server_options, max_connections_defaults_to_auto_and_parses_from_yaml) {
  sluice::http::server_options o;
  EXPECT_EQ(o.max_connections, 0u);
  sluice::config::option_table t;
  o.register_options(t);
  ASSERT_TRUE(t.apply_yaml_text("max-connections: 4096\n").has_value());
  EXPECT_EQ(o.max_connections, 4096u);
}
