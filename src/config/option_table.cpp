#include "config/option_table.hpp"

#include <CLI/CLI.hpp>
// yaml-cpp 0.7's iterator code trips GCC 12's -Wdangling-pointer false positive when inlined here.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#endif
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

namespace sluice::config {
namespace {

result<void> parse_bool(std::string_view text, bool& out) {
  if (text == "true" || text == "1" || text == "yes" || text == "on") { out = true; return ok; }
  if (text == "false" || text == "0" || text == "no" || text == "off") { out = false; return ok; }
  return error::make(errc::bad_request, "expected true or false, got '" + std::string(text) + "'");
}

error with_name(const std::string& origin, const std::string& name, error e) {
  e.message = origin + ": " + name + ": " + e.message;
  return e;
}

}  // namespace

option_table& option_table::add_custom(option_spec spec) {
  specs_.push_back(std::move(spec));
  return *this;
}

option_table& option_table::add_node(std::string name, std::string help,
                                     std::function<result<void>(const YAML::Node&)> set) {
  option_spec s{std::move(name), std::move(help), "", nullptr};
  s.set_node = std::move(set);
  return add_custom(std::move(s));
}

option_table& option_table::add(std::string name, std::string help, std::string& target) {
  return add_custom({std::move(name), std::move(help), target, [&target](std::string_view v) -> result<void> {
                       target.assign(v);
                       return ok;
                     }});
}

option_table& option_table::add(std::string name, std::string help, std::uint64_t& target) {
  return add_custom({std::move(name), std::move(help), std::to_string(target),
                     [&target](std::string_view v) -> result<void> {
                       std::uint64_t x = 0;
                       auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
                       if (ec != std::errc{} || p != v.data() + v.size() || v.empty())
                         return error::make(errc::bad_request, "expected a whole number, got '" + std::string(v) + "'");
                       target = x;
                       return ok;
                     }});
}

option_table& option_table::add(std::string name, std::string help, double& target) {
  std::ostringstream def;
  def << target;
  return add_custom({std::move(name), std::move(help), def.str(), [&target](std::string_view v) -> result<void> {
                       double x = 0;
                       auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
                       if (ec != std::errc() || p != v.data() + v.size() || !std::isfinite(x) || !(x >= 0))
                         return error::make(errc::bad_request, "expected a non-negative number, got '" + std::string(v) + "'");
                       target = x;
                       return ok;
                     }});
}

option_table& option_table::add(std::string name, std::string help, bool& target) {
  option_spec s{std::move(name), std::move(help), target ? "true" : "false",
                [&target](std::string_view v) { return parse_bool(v, target); }, true};
  return add_custom(std::move(s));
}

option_table& option_table::add_size(std::string name, std::string help, std::uint64_t& target) {
  return add_custom({std::move(name), std::move(help), format_size(target), [&target](std::string_view v) -> result<void> {
                       auto r = parse_size(v);
                       if (!r) return std::move(r).err();
                       target = *r;
                       return ok;
                     }});
}

option_table& option_table::add_duration(std::string name, std::string help, duration& target) {
  return add_custom({std::move(name), std::move(help), format_duration(target),
                     [&target](std::string_view v) -> result<void> {
                       auto r = parse_duration(v);
                       if (!r) return std::move(r).err();
                       target = *r;
                       return ok;
                     }});
}

option_table& option_table::add_list(std::string name, std::string help, std::vector<std::string>& target) {
  // Each occurrence appends; a YAML list appends each element. The first value replaces defaults.
  auto first = std::make_shared<bool>(true);
  std::string defaults;
  for (const auto& item : target) defaults += (defaults.empty() ? "" : ", ") + item;
  option_spec s{std::move(name), std::move(help), std::move(defaults), [&target, first](std::string_view v) -> result<void> {
                  if (*first) { target.clear(); *first = false; }
                  target.emplace_back(v);
                  return ok;
                }};
  s.is_list = true;
  return add_custom(std::move(s));
}

void option_table::register_cli(CLI::App& app) {
  cli_values_.assign(specs_.size(), {});
  for (std::size_t i = 0; i < specs_.size(); ++i) {
    auto& s = specs_[i];
    if (!s.set) continue;  // structured, config-file-only
    std::string desc = s.help + (s.default_text.empty() ? "" : " [default: " + s.default_text + "]");
    if (s.is_flag) {
      // A bare --flag means true; --flag=false also works.
      app.add_flag("--" + s.name + "{true}", cli_values_[i], desc);
    } else {
      app.add_option("--" + s.name, cli_values_[i], desc)->type_name("VALUE")->allow_extra_args(false);
    }
  }
}

result<void> option_table::apply_cli() {
  for (std::size_t i = 0; i < specs_.size() && i < cli_values_.size(); ++i) {
    for (auto& v : cli_values_[i]) {
      auto r = specs_[i].set(v);
      if (!r) return with_name("command line", "--" + specs_[i].name, std::move(r).err());
    }
  }
  return ok;
}

result<void> option_table::apply_yaml_text(std::string_view text, std::string_view origin) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return error::make(errc::bad_request, std::string(origin) + ": invalid YAML: " + e.what());
  }
  if (root.IsNull()) return ok;
  return apply_yaml_map(root, origin);
}

result<void> option_table::apply_yaml_map(const YAML::Node& root, std::string_view origin) {
  if (!root.IsMap()) return error::make(errc::bad_request, std::string(origin) + ": expected a map of option names");
  for (auto it = root.begin(); it != root.end(); ++it) {
    // A key that is not a plain scalar (`? [a]: 1`, `? {a: 1}: 2`, a null key) names no option.
    // (as<std::string>() would throw on it: found by fuzz_config.)
    if (!it->first.IsScalar()) return error::make(errc::bad_request, std::string(origin) + ": option names must be plain words");
    auto key = it->first.Scalar();
    auto spec = std::find_if(specs_.begin(), specs_.end(), [&](const option_spec& s) { return s.name == key; });
    if (spec == specs_.end()) return error::make(errc::bad_request, std::string(origin) + ": unknown option '" + key + "'");
    if (spec->set_node) {
      const YAML::Node whole = it->second;
      auto r = spec->set_node(whole);
      if (!r) return with_name(std::string(origin), key, std::move(r).err());
      continue;
    }
    auto apply = [&](const YAML::Node& n) -> result<void> {
      if (!n.IsScalar()) return error::make(errc::bad_request, "expected a scalar value");
      return spec->set(n.Scalar());
    };
    const YAML::Node value = it->second;  // a copy: iterating the iterator's temporary dangles
    if (value.IsSequence()) {
      for (const auto& n : value) {
        auto r = apply(n);
        if (!r) return with_name(std::string(origin), key, std::move(r).err());
      }
    } else {
      auto r = apply(value);
      if (!r) return with_name(std::string(origin), key, std::move(r).err());
    }
  }
  return ok;
}

result<void> option_table::apply_yaml_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return error::make(errc::bad_request, "cannot read config file '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return apply_yaml_text(ss.str(), path);
}

result<host_port> parse_host_port(std::string_view text) {
  std::string_view host, port;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':')
      return error::make(errc::bad_request, "invalid address '" + std::string(text) + "' (expected [IPv6]:PORT)");
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string_view::npos)
      return error::make(errc::bad_request, "invalid address '" + std::string(text) + "' (expected HOST:PORT)");
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  unsigned p = 0;
  auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
  if (host.empty() || port.empty() || ec != std::errc{} || ptr != port.data() + port.size() || p > 65535)
    return error::make(errc::bad_request, "invalid address '" + std::string(text) + "' (expected HOST:PORT)");
  return host_port{std::string(host), static_cast<std::uint16_t>(p)};
}

}  // namespace sluice::config
