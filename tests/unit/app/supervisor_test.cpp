// The supervisor's pure parts: how long a dying worker's replacement waits, and what a generation
// is prepared with (the keys file read once, so replacements share it).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <unistd.h>

#include "app/supervisor.hpp"

using namespace sluice;
using namespace std::chrono_literals;

namespace {

TEST(Supervisor, AReplacementStartsAtOnceThenBacksOffWhileItKeepsDying) {
  EXPECT_EQ(app::restart_delay(0), 0ms);
  EXPECT_EQ(app::restart_delay(1), 0ms) << "the first death is replaced at once";
  EXPECT_EQ(app::restart_delay(2), 250ms);
  EXPECT_EQ(app::restart_delay(3), 500ms);
  EXPECT_EQ(app::restart_delay(6), 4000ms);
  EXPECT_EQ(app::restart_delay(7), 8000ms);
  EXPECT_EQ(app::restart_delay(8), 10000ms) << "at most 10 s";
  EXPECT_EQ(app::restart_delay(1000), 10000ms);
}

TEST(Supervisor, AGenerationCarriesItsKeysFileAsReadAndRefusesABrokenOne) {
  char path[] = "/tmp/sluice-keys-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  std::ofstream(path) << "sk-one 0 0 one\n";
  app::serve_options o;
  o.admission.keys_file = path;
  ASSERT_TRUE(app::prepare_generation(o).has_value());
  ASSERT_TRUE(o.keys_text.has_value());
  EXPECT_EQ(*o.keys_text, "sk-one 0 0 one\n");
  std::ofstream(path) << "sk-two not-a-number 0\n";
  auto broken = app::prepare_generation(o);
  ASSERT_FALSE(broken.has_value());
  EXPECT_NE(broken.err().message.find("keys-file"), std::string::npos) << broken.err().message;
  EXPECT_EQ(broken.err().message.find("sk-two"), std::string::npos) << "a key never appears in an error";
  std::remove(path);
  EXPECT_FALSE(app::prepare_generation(o).has_value()) << "a missing file";
}

}  // namespace
