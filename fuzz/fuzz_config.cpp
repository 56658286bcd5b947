// The config loader: any YAML text applied to an option table of every kind the gateway registers
// (count, size, duration, ratio, flag, list, string, and a node: the `upstreams:` list parsed by
// routing), plus the units parsers on their own. It applies or refuses with a bad_request; never
// a crash or an exception out of it.
#include <yaml-cpp/yaml.h>

#include "config/option_table.hpp"
#include "config/url.hpp"
#include "core/units.hpp"
#include "fuzz_util.hpp"
#include "routing/options.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace sluice;
  const std::string_view text = fuzz::as_text(data, size);
  std::uint64_t count = 0, bytes = 0;
  double ratio = 0;
  bool flag = false;
  duration wait{};
  std::string name;
  std::vector<std::string> list;
  config::option_table t;
  t.add("threads", "count", count)
      .add_size("max-body-bytes", "size", bytes)
      .add("shed-threshold", "ratio", ratio)
      .add("flag", "flag", flag)
      .add_duration("request-timeout", "duration", wait)
      .add("name", "string", name)
      .add_list("upstream", "list", list)
      .add_node("upstreams", "node", [](const YAML::Node&) -> result<void> { return ok; });
  auto r = t.apply_yaml_text(text, "fuzz");
  if (!r) fuzz::require(r.err().code == errc::bad_request, "a refused config is a bad_request");
  auto u = routing::parse_upstreams_yaml(text);
  if (!u) fuzz::require(u.err().code == errc::bad_request, "refused upstreams are a bad_request");
  (void)parse_size(text);
  (void)parse_duration(text);
  (void)config::parse_host_port(text);
  (void)config::parse_url(text);
  return 0;
}
