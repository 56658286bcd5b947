// One table of named options shared by the YAML config file and the command line, so every limit
// has exactly one name, one default and one parser. Built once at start-up on one thread; the
// resulting *_options structs are frozen values afterwards.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "core/units.hpp"

namespace CLI {
class App;
}
namespace YAML {
class Node;
}

namespace sluice::config {

struct option_spec {
  std::string name;          // kebab-case: "--name" on the command line, "name:" in YAML
  std::string help;
  std::string default_text;  // shown in --help and docs
  std::function<result<void>(std::string_view)> set;
  bool is_flag = false;      // a boolean that takes no value on the command line
  // A structured value (a YAML list of maps, ...): config file only, never a flag. When set, the
  // YAML value is handed over whole instead of scalar by scalar.
  std::function<result<void>(const YAML::Node&)> set_node = {};
  bool is_list = false;      // repeatable; default_text joins the default items with ", "
};

class option_table {
 public:
  // Typed registrations: each parses text with the project's units and writes into `target`.
  option_table& add(std::string name, std::string help, std::string& target);
  option_table& add(std::string name, std::string help, std::uint64_t& target);  // plain count
  option_table& add(std::string name, std::string help, double& target);
  option_table& add(std::string name, std::string help, bool& target);
  option_table& add_size(std::string name, std::string help, std::uint64_t& target);
  option_table& add_duration(std::string name, std::string help, duration& target);
  option_table& add_list(std::string name, std::string help, std::vector<std::string>& target);
  option_table& add_custom(option_spec spec);
  // A config-file-only option whose value is a whole YAML node (e.g. the `upstreams:` list).
  option_table& add_node(std::string name, std::string help, std::function<result<void>(const YAML::Node&)> set);

  const std::vector<option_spec>& specs() const { return specs_; }

  // Registers every option on a CLI11 (sub)command. Values given there are applied by
  // apply_cli() after the config file, so flags win.
  void register_cli(CLI::App& app);
  // Applies a YAML file (a flat map of option names to scalars or lists). Unknown keys are errors.
  result<void> apply_yaml_file(const std::string& path);
  result<void> apply_yaml_text(std::string_view text, std::string_view origin = "config");
  // Applies one YAML map of option names (a nested section, e.g. one entry of `upstreams:`).
  result<void> apply_yaml_map(const YAML::Node& map, std::string_view origin);
  // Applies the values captured by register_cli.
  result<void> apply_cli();
  // Takes the command-line values another table captured (a table with the same options, registered
  // in the same order: a config read again on SIGHUP keeps the flags the process started with).
  void adopt_cli_values(const option_table& from) { cli_values_ = from.cli_values_; }

 private:
  std::vector<option_spec> specs_;
  std::vector<std::vector<std::string>> cli_values_;  // parallel to specs_, filled by CLI11
};

// "HOST:PORT" with an IPv4/IPv6 literal or a name; "[::1]:8080" for IPv6.
struct host_port {
  std::string host;
  std::uint16_t port = 0;
};
result<host_port> parse_host_port(std::string_view text);

}  // namespace sluice::config
