// The packaged /etc/sluice/sluice.yaml is `sluice serve --print-config`: every serve option,
// commented out at its default. These tests hold it to the option table it is generated from.
#include "app/serve_options.hpp"
#include "config/commented_yaml.hpp"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "../config/uncommented.hpp"

using namespace sluice;

namespace {

std::string serve_config_text(config::option_table& table) {
  return config::commented_yaml(table, "packaged config");
}

}  // namespace

TEST(PackagedConfig, NamesEveryServeOption) {
  app::serve_options opts;
  config::option_table table;
  opts.register_options(table);
  auto text = serve_config_text(table);
  ASSERT_GT(table.specs().size(), 40u);
  for (const auto& s : table.specs())
    EXPECT_NE(text.find("\n# " + s.name + ": "), std::string::npos) << s.name;
  EXPECT_TRUE(YAML::Load(text).IsNull()) << "nothing in the packaged file may be in force";
}

TEST(PackagedConfig, EveryLineUncommentedIsAValidConfigOfTheDefaults) {
  app::serve_options defaults;
  config::option_table table;
  defaults.register_options(table);
  const auto text = serve_config_text(table);

  app::serve_options opts;
  config::option_table fresh;
  opts.register_options(fresh);
  std::size_t count = 0;
  auto yaml = test::uncommented_options(text, fresh, &count);
  std::size_t scalar_specs = 0;
  for (const auto& s : fresh.specs()) scalar_specs += s.set_node ? 0 : 1;
  EXPECT_EQ(count, scalar_specs);
  auto applied = fresh.apply_yaml_text(yaml, "uncommented");
  ASSERT_TRUE(applied) << applied.err().message << "\n" << yaml;
  auto valid = opts.validate();
  EXPECT_TRUE(valid) << (valid ? "" : valid.err().message);
  // Read back, the defaults print the same file.
  config::option_table again;
  opts.register_options(again);
  EXPECT_EQ(serve_config_text(again), text);
}
